package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AppSpec is the spec of an app kind's CR (the project's CRD: size, image, port, nodePort).
type AppSpec struct {
	Size     *int32 `json:"size,omitempty"`
	Image    string `json:"image,omitempty"`
	Port     *int32 `json:"port,omitempty"`
	NodePort *int32 `json:"nodePort,omitempty"`
}

// AppStatus is what the TypeScript operator's computeStatus reports.
type AppStatus struct {
	Nodes              []string           `json:"nodes,omitempty"`
	Replicas           int32              `json:"replicas"`
	ReadyReplicas      int32              `json:"readyReplicas"`
	NodePort           *int32             `json:"nodePort,omitempty"`
	Selector           string             `json:"selector,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// App is one CR of the served kind; its GroupVersionKind comes from the flags.
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppSpec   `json:"spec,omitempty"`
	Status            AppStatus `json:"status,omitempty"`
}

// AppList is a list of App.
type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}

func (in *AppSpec) DeepCopyInto(out *AppSpec) {
	*out = *in
	if in.Size != nil {
		v := *in.Size
		out.Size = &v
	}
	if in.Port != nil {
		v := *in.Port
		out.Port = &v
	}
	if in.NodePort != nil {
		v := *in.NodePort
		out.NodePort = &v
	}
}

func (in *AppStatus) DeepCopyInto(out *AppStatus) {
	*out = *in
	if in.Nodes != nil {
		out.Nodes = append([]string(nil), in.Nodes...)
	}
	if in.NodePort != nil {
		v := *in.NodePort
		out.NodePort = &v
	}
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

func (in *App) DeepCopyInto(out *App) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

func (in *App) DeepCopy() *App {
	if in == nil {
		return nil
	}
	out := new(App)
	in.DeepCopyInto(out)
	return out
}

func (in *App) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *AppList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(AppList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]App, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// addKind registers App and AppList under the served group, version and kind.
func addKind(s *runtime.Scheme, gvk schema.GroupVersionKind) {
	s.AddKnownTypeWithName(gvk, &App{})
	s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &AppList{})
	metav1.AddToGroupVersion(s, gvk.GroupVersion())
}
