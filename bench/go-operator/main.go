// A minimal controller-runtime operator for the sample app kind, written the usual operator-sdk way,
// as a reference for `npm run bench -- --go`: it applies the same Deployment and Service as the
// TypeScript operator's render() and writes the same status, so the two can be compared on the same
// machine. Not part of the product.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	var k Kind
	var metricsAddr, probeAddr, fieldManager string
	var workers int
	var plural string
	flag.StringVar(&k.Group, "group", "swallowlab.com", "API group of the served kind")
	flag.StringVar(&k.Version, "version", "v1alpha1", "API version of the served kind")
	flag.StringVar(&k.Kind, "kind", "EchoFlask", "Kind served")
	flag.StringVar(&plural, "plural", "echoflasks", "the kind's plural (checked against discovery)")
	flag.StringVar(&k.Image, "image", "takeyan/flask:0.0.3", "the kind's default image")
	flag.IntVar(&k.Port, "port", 5000, "the kind's default container and Service port")
	flag.StringVar(&k.AppName, "app-name", "echoflask", "the kind's app name (container name, app.kubernetes.io/name)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "metrics address")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "health probe address (/readyz passes once the caches are synced)")
	flag.StringVar(&fieldManager, "field-manager", "appkind-go-operator", "server-side apply field manager")
	flag.IntVar(&workers, "workers", 4, "MaxConcurrentReconciles")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		log.Error(err, "scheme")
		os.Exit(1)
	}
	addKind(scheme, schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
	})
	if err != nil {
		log.Error(err, "manager")
		os.Exit(1)
	}
	gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil || mapping.Resource.Resource != plural {
		log.Error(err, "the served kind is not installed as expected", "kind", gvk.String(), "plural", plural)
		os.Exit(1)
	}
	r := &Reconciler{Client: mgr.GetClient(), Kind: k, FieldManager: fieldManager}
	if err := r.SetupWithManager(mgr, workers); err != nil {
		log.Error(err, "controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "healthz")
		os.Exit(1)
	}
	// Ready once every informer the controller started has synced (as the TypeScript operator's /readyz).
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		log.Error(err, "readyz")
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
