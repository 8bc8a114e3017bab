package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Kind is the served app kind and its defaults (operator/config.ts SAMPLE_KIND unless flags say otherwise).
type Kind struct {
	Group, Version, Kind, Image, AppName string
	Port                                 int
}

// The labels the construct (lib/) gives every child and its pods.
const (
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelName      = "app.kubernetes.io/name"
	managedBy      = "cdk8s-appkind"
)

// Reconciler applies a CR's Deployment and Service and writes its status.
type Reconciler struct {
	client.Client
	Kind         Kind
	FieldManager string
}

func (r *Reconciler) newApp() *App {
	a := &App{}
	a.APIVersion = r.Kind.Group + "/" + r.Kind.Version
	a.Kind = r.Kind.Kind
	return a
}

// SetupWithManager: For the kind, Owns Deployments and Services, Watches pods (mapped to their CR
// by the instance label, since pods are owned by ReplicaSets), MaxConcurrentReconciles workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	// Informers registered up front, so /readyz (WaitForCacheSync) waits for all four.
	for _, o := range []client.Object{r.newApp(), &appsv1.Deployment{}, &corev1.Service{}, &corev1.Pod{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), o, cache.BlockUntilSynced(false)); err != nil {
			return err
		}
	}
	podToApp := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[labelManagedBy] != managedBy || l[labelName] != r.Kind.AppName || l[labelInstance] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[labelInstance]}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(r.newApp()).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.Pod{}, podToApp).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named(strings.ToLower(r.Kind.Kind)).
		Complete(r)
}

func selectorLabels(name, appName string) map[string]string {
	return map[string]string{labelInstance: name, labelManagedBy: managedBy, labelName: appName}
}

// selectorString is `k=v,k=v` in key order, as operator/status.ts selectorString.
func selectorString(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	app := r.newApp()
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the children
	}
	size := int32(1)
	if app.Spec.Size != nil {
		size = *app.Spec.Size
	}
	image := r.Kind.Image
	if app.Spec.Image != "" {
		image = app.Spec.Image
	}
	port := int32(r.Kind.Port)
	if app.Spec.Port != nil {
		port = *app.Spec.Port
	}
	labels := selectorLabels(app.Name, r.Kind.AppName)
	owner := metav1ac.OwnerReference().
		WithAPIVersion(app.APIVersion).WithKind(app.Kind).WithName(app.Name).WithUID(app.UID).
		WithController(true).WithBlockOwnerDeletion(true)

	dep := deploymentFor(app, r.Kind.AppName, image, port, size, labels, owner)
	svc := serviceFor(app, port, labels, owner)
	// The answers to the applies are the live objects, newer than the cache: status uses them.
	var failure error
	if err := r.Apply(ctx, dep, client.FieldOwner(r.FieldManager), client.ForceOwnership); err != nil {
		failure = fmt.Errorf("Deployment %s/%s: %w", app.Namespace, *dep.Name, err)
	} else if err := r.Apply(ctx, svc, client.FieldOwner(r.FieldManager), client.ForceOwnership); err != nil {
		failure = fmt.Errorf("Service %s/%s: %w", app.Namespace, *svc.Name, err)
	}

	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(app.Namespace), client.MatchingLabels(labels)); err != nil {
		return ctrl.Result{}, err
	}
	status := computeStatus(app, size, labels, dep, svc, pods.Items, failure)
	if !equality.Semantic.DeepEqual(app.Status, status) {
		patch := client.MergeFrom(app.DeepCopy())
		app.Status = status
		if err := r.Status().Patch(ctx, app, patch); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, err
		}
		logger.V(1).Info("status updated", "replicas", status.Replicas, "readyReplicas", status.ReadyReplicas)
	}
	return ctrl.Result{}, failure
}

// deploymentFor is the Deployment operator/render.ts renders for the CR (the lib construct's
// defaults spelled out), with the CR as controller owner.
func deploymentFor(app *App, appName, image string, port, size int32, labels map[string]string, owner *metav1ac.OwnerReferenceApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	quarter := intstr.FromString("25%")
	return appsv1ac.Deployment(app.Name+"-deployment", app.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner).
		WithSpec(appsv1ac.DeploymentSpec().
			WithMinReadySeconds(0).
			WithProgressDeadlineSeconds(600).
			WithReplicas(size).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxSurge(quarter).WithMaxUnavailable(quarter))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithContainers(corev1ac.Container().
						WithName(appName).
						WithImage(image).
						WithImagePullPolicy(corev1.PullIfNotPresent).
						WithPorts(corev1ac.ContainerPort().WithContainerPort(port)).
						WithSecurityContext(corev1ac.SecurityContext().
							WithAllowPrivilegeEscalation(false).
							WithPrivileged(false).
							WithReadOnlyRootFilesystem(false).
							WithRunAsNonRoot(false))).
					WithDNSPolicy(corev1.DNSClusterFirst).
					WithHostNetwork(false).
					WithRestartPolicy(corev1.RestartPolicyAlways).
					WithSecurityContext(corev1ac.PodSecurityContext().
						WithFSGroupChangePolicy(corev1.FSGroupChangeAlways).
						WithRunAsNonRoot(false)).
					WithSetHostnameAsFQDN(false).
					WithTerminationGracePeriodSeconds(30))))
}

// serviceFor is the NodePort Service operator/render.ts renders for the CR.
func serviceFor(app *App, port int32, labels map[string]string, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	p := corev1ac.ServicePort().WithName("http").WithPort(port).WithTargetPort(intstr.FromInt32(port))
	if app.Spec.NodePort != nil {
		p = p.WithNodePort(*app.Spec.NodePort)
	}
	return corev1ac.Service(app.Name+"-svc", app.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeNodePort).
			WithPorts(p).
			WithSelector(labels))
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// computeStatus is operator/status.ts computeStatus: the same fields, conditions, reasons and messages.
func computeStatus(app *App, size int32, labels map[string]string, dep *appsv1ac.DeploymentApplyConfiguration, svc *corev1ac.ServiceApplyConfiguration, pods []corev1.Pod, failure error) AppStatus {
	var nodes []string
	var readyPods int32
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		nodes = append(nodes, pods[i].Name)
		if podReady(&pods[i]) {
			readyPods++
		}
	}
	sort.Strings(nodes)
	// An apply that failed leaves dep without a UID: the Deployment is then unknown here.
	exists := dep.UID != nil
	var replicas, ready, updated int32
	var observed, generation int64
	if exists && dep.Status != nil {
		replicas, ready, updated = val(dep.Status.Replicas), val(dep.Status.ReadyReplicas), val(dep.Status.UpdatedReplicas)
		observed = val(dep.Status.ObservedGeneration)
	}
	if exists {
		generation = val(dep.Generation)
	}
	// status.ts: the Deployment's readyReplicas, else (absent, i.e. 0) the ready pods counted.
	if ready == 0 {
		ready = readyPods
	}
	rolledOut := exists && observed >= generation && updated == size && replicas == size
	isReady := rolledOut && ready >= size
	gen := app.Generation
	conds := []metav1.Condition{}
	set := func(t string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: gen})
	}
	readyMsg := fmt.Sprintf("%d/%d pods ready", ready, size)
	switch {
	case isReady:
		set("Ready", metav1.ConditionTrue, "AllReplicasReady", readyMsg)
	case exists:
		set("Ready", metav1.ConditionFalse, "ReplicasNotReady", readyMsg)
	default:
		set("Ready", metav1.ConditionFalse, "DeploymentMissing", readyMsg)
	}
	if rolledOut {
		set("Progressing", metav1.ConditionFalse, "RolloutComplete", fmt.Sprintf("Deployment has %d up-to-date replicas", size))
	} else {
		set("Progressing", metav1.ConditionTrue, "RollingOut", fmt.Sprintf("Deployment has %d/%d up-to-date replicas", updated, size))
	}
	if failure != nil {
		set("Degraded", metav1.ConditionTrue, "ApplyFailed", failure.Error())
	} else {
		set("Degraded", metav1.ConditionFalse, "ReconcileSucceeded", "Deployment and Service are applied")
	}
	// lastTransitionTime kept where the condition's status did not change (status.ts withTransitionTime).
	for i := range conds {
		if before := meta.FindStatusCondition(app.Status.Conditions, conds[i].Type); before != nil && before.Status == conds[i].Status {
			conds[i].LastTransitionTime = before.LastTransitionTime
		} else {
			conds[i].LastTransitionTime = metav1.Now().Rfc3339Copy()
		}
	}
	var nodePort *int32
	if svc.Spec != nil && len(svc.Spec.Ports) > 0 && svc.Spec.Ports[0].NodePort != nil && *svc.Spec.Ports[0].NodePort != 0 {
		v := *svc.Spec.Ports[0].NodePort
		nodePort = &v
	}
	return AppStatus{
		Nodes:              nodes,
		Replicas:           replicas,
		ReadyReplicas:      ready,
		NodePort:           nodePort,
		Selector:           selectorString(labels),
		ObservedGeneration: gen,
		Conditions:         conds,
	}
}
