// A Go cdk8s program composing ContainerApp (from the jsii-generated Go bindings of cdk8s-appkind)
// next to a cdk8s-plus-27 ConfigMap, and declaring an app kind as an AppKind object. It prints the
// YAML; test/consumers/go.test.ts checks it equals the TypeScript synth of the same charts.
package main

import (
	"fmt"

	"cdk8sappkind"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdk8s-team/cdk8s-core-go/cdk8s/v2"
	"github.com/cdk8s-team/cdk8s-plus-go/cdk8splus27/v2"
)

// NewShopChart: a ConfigMap and the echo app reading it. Every struct and enum of the library's
// ContainerAppProps appears once: command and args, env from a value, a ConfigMap key, a Secret key and
// a pod field, envFrom both ways, the three probes (HTTP, TCP, exec), the four volume sources, a ClusterIP
// Service, a PodDisruptionBudget and a NetworkPolicy with each kind of peer.
func NewShopChart(scope constructs.Construct, id string) cdk8s.Chart {
	chart := cdk8s.NewChart(scope, jsii.String(id), &cdk8s.ChartProps{Namespace: jsii.String("shop")})
	settings := cdk8splus27.NewConfigMap(chart, jsii.String("settings"), &cdk8splus27.ConfigMapProps{
		Data: &map[string]*string{"GREETING": jsii.String("hello")},
	})
	cdk8sappkind.NewContainerApp(chart, jsii.String("echo"), &cdk8sappkind.ContainerAppProps{
		Image:    jsii.String("takeyan/flask:0.0.3"),
		Port:     jsii.Number(5000),
		Replicas: jsii.Number(2),
		Command:  jsii.Strings("gunicorn"),
		Args:     jsii.Strings("--workers", "2"),
		Env: &[]*cdk8sappkind.EnvVar{
			{Name: jsii.String("SETTINGS"), Value: settings.Name()},
			{Name: jsii.String("GREETING"), ValueFrom: &cdk8sappkind.EnvVarSource{
				ConfigMapKeyRef: &cdk8sappkind.ConfigMapKeySelector{Name: settings.Name(), Key: jsii.String("GREETING")}}},
			{Name: jsii.String("DATABASE_URL"), ValueFrom: &cdk8sappkind.EnvVarSource{
				SecretKeyRef: &cdk8sappkind.SecretKeySelector{Name: jsii.String("db"), Key: jsii.String("url")}}},
			{Name: jsii.String("POD_NAME"), ValueFrom: &cdk8sappkind.EnvVarSource{
				FieldRef: &cdk8sappkind.ObjectFieldSelector{FieldPath: jsii.String("metadata.name")}}},
		},
		EnvFrom: &[]*cdk8sappkind.EnvFromSource{
			{ConfigMapRef: &cdk8sappkind.ConfigMapEnvSource{Name: settings.Name()}},
			{Prefix: jsii.String("DB_"), SecretRef: &cdk8sappkind.SecretEnvSource{Name: jsii.String("db"), Optional: jsii.Bool(true)}},
		},
		ReadinessProbe: &cdk8sappkind.Probe{
			HttpGet: &cdk8sappkind.HttpGetAction{Path: jsii.String("/healthz")}, PeriodSeconds: jsii.Number(5), FailureThreshold: jsii.Number(3)},
		LivenessProbe: &cdk8sappkind.Probe{TcpSocket: &cdk8sappkind.TcpSocketAction{}},
		StartupProbe: &cdk8sappkind.Probe{
			Exec: &cdk8sappkind.ExecAction{Command: jsii.Strings("cat", "/tmp/started")}, FailureThreshold: jsii.Number(30)},
		Volumes: &[]*cdk8sappkind.Volume{
			{Name: jsii.String("cache"), EmptyDir: &cdk8sappkind.EmptyDirVolumeSource{SizeLimit: jsii.String("64Mi")}},
			{Name: jsii.String("conf"), ConfigMap: &cdk8sappkind.ConfigMapVolumeSource{Name: settings.Name()}},
			{Name: jsii.String("tls"), Secret: &cdk8sappkind.SecretVolumeSource{SecretName: jsii.String("echo-tls"),
				Items: &[]*cdk8sappkind.KeyToPath{{Key: jsii.String("tls.key"), Path: jsii.String("key.pem"), Mode: jsii.Number(256)}}}},
			{Name: jsii.String("data"), PersistentVolumeClaim: &cdk8sappkind.PersistentVolumeClaimVolumeSource{ClaimName: jsii.String("echo-data")}},
		},
		VolumeMounts: &[]*cdk8sappkind.VolumeMount{
			{Name: jsii.String("cache"), MountPath: jsii.String("/var/cache/app")},
			{Name: jsii.String("conf"), MountPath: jsii.String("/etc/app"), ReadOnly: jsii.Bool(true)},
			{Name: jsii.String("tls"), MountPath: jsii.String("/etc/tls"), ReadOnly: jsii.Bool(true)},
			{Name: jsii.String("data"), MountPath: jsii.String("/var/lib/app"), SubPath: jsii.String("echo")},
		},
		ImagePullSecrets:             &[]*cdk8sappkind.LocalObjectReference{{Name: jsii.String("regcred")}},
		ServiceAccountName:           jsii.String("echo"),
		AutomountServiceAccountToken: jsii.Bool(true),
		ServiceType:                  cdk8sappkind.ServiceType_CLUSTER_IP,
		PodDisruptionBudget:          &cdk8sappkind.PodDisruptionBudgetOptions{MaxUnavailable: jsii.String("1")},
		NetworkPolicy: &cdk8sappkind.NetworkPolicyOptions{From: &[]*cdk8sappkind.NetworkPolicyPeer{
			{PodSelector: &cdk8sappkind.LabelSelector{MatchLabels: &map[string]*string{"role": jsii.String("frontend")}}},
			{NamespaceSelector: &cdk8sappkind.LabelSelector{MatchLabels: &map[string]*string{"team": jsii.String("blue")}}},
			{IpBlock: &cdk8sappkind.IpBlock{Cidr: jsii.String("10.0.0.0/16"), Except: jsii.Strings("10.0.5.0/24")}},
		}},
		ImagePullPolicy: cdk8sappkind.ImagePullPolicy_ALWAYS,
		Resources: &cdk8sappkind.ResourceRequirements{
			Requests: &cdk8sappkind.ResourceList{Cpu: jsii.String("100m"), Memory: jsii.String("64Mi")},
			Limits:   &cdk8sappkind.ResourceList{Memory: jsii.String("128Mi")},
		},
		SecurityContext: &cdk8sappkind.ContainerSecurity{
			RunAsNonRoot: jsii.Bool(true), RunAsUser: jsii.Number(1000), ReadOnlyRootFilesystem: jsii.Bool(true)},
		Labels: &map[string]*string{"team": jsii.String("blue")},
	})
	return chart
}

// NewKindsChart: the kind EchoFlask declared as an AppKind object, rolled out in waves of a quarter of
// its apps, its CRD deleted with it.
func NewKindsChart(scope constructs.Construct, id string) cdk8s.Chart {
	chart := cdk8s.NewChart(scope, jsii.String(id), nil)
	cdk8sappkind.NewAppKindObject(chart, jsii.String("echoflask"), &cdk8sappkind.AppKindObjectProps{
		AppKind: &cdk8sappkind.AppKind{
			Group: jsii.String("swallowlab.com"), Version: jsii.String("v1alpha1"), Kind: jsii.String("EchoFlask"), Plural: jsii.String("echoflasks"),
			Image: jsii.String("takeyan/flask:0.0.3"), Port: jsii.Number(5000), AppName: jsii.String("echoflask"),
			Rollout: &cdk8sappkind.RolloutOptions{MaxConcurrent: jsii.String("25%"), ProgressDeadlineSeconds: jsii.Number(120)},
		},
		DeletionPolicy: cdk8sappkind.AppKindDeletionPolicy_DELETE,
	})
	return chart
}

func main() {
	app := cdk8s.NewApp(nil)
	NewShopChart(app, "shop")
	NewKindsChart(app, "kinds")
	fmt.Print(*app.SynthYaml())
}
