// A Go cdk8s program composing ContainerApp (from the jsii-generated Go bindings of cdk8s-appkind)
// next to a cdk8s-plus-27 ConfigMap. It prints the app's YAML; test/consumers/go.test.ts checks it
// equals the TypeScript synth of the same chart.
package main

import (
	"fmt"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdk8s-appkind/cdk8s-appkind-go/cdk8sappkind"
	"github.com/cdk8s-team/cdk8s-core-go/cdk8s/v2"
	"github.com/cdk8s-team/cdk8s-plus-go/cdk8splus27/v2"
)

// NewShopChart: a ConfigMap and the echo app reading it.
func NewShopChart(scope constructs.Construct, id string) cdk8s.Chart {
	chart := cdk8s.NewChart(scope, jsii.String(id), &cdk8s.ChartProps{Namespace: jsii.String("shop")})
	settings := cdk8splus27.NewConfigMap(chart, jsii.String("settings"), &cdk8splus27.ConfigMapProps{
		Data: &map[string]*string{"GREETING": jsii.String("hello")},
	})
	cdk8sappkind.NewContainerApp(chart, jsii.String("echo"), &cdk8sappkind.ContainerAppProps{
		Image:           jsii.String("takeyan/flask:0.0.3"),
		Port:            jsii.Number(5000),
		Replicas:        jsii.Number(2),
		Env:             &map[string]*string{"SETTINGS": settings.Name()},
		ImagePullPolicy: cdk8sappkind.ImagePullPolicy_ALWAYS,
		Resources: &cdk8sappkind.ResourceRequirements{
			Requests: &cdk8sappkind.ResourceList{Cpu: jsii.String("100m"), Memory: jsii.String("64Mi")},
			Limits:   &cdk8sappkind.ResourceList{Memory: jsii.String("128Mi")},
		},
		SecurityContext: &cdk8sappkind.ContainerSecurity{RunAsNonRoot: jsii.Bool(true), RunAsUser: jsii.Number(1000)},
		Labels:          &map[string]*string{"team": jsii.String("blue")},
	})
	return chart
}

func main() {
	app := cdk8s.NewApp(nil)
	NewShopChart(app, "shop")
	fmt.Print(*app.SynthYaml())
}
