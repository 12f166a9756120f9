package migrate

import (
	"maps"
	"slices"

	goyaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied describes the old object: kubectl apply would diff against it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// decodeObject decodes a source object strictly and holds its metadata, md
// inside v, to what a budget needs. Fields the API server owns (uid,
// managedFields, ...) are dropped silently; those that tie the object to its
// old controller are dropped with a note.
func (in *input) decodeObject(v any, md *metav1.ObjectMeta) ([]string, error) {
	errs, _ := in.Decode(v, in.name)
	if len(errs) == 0 {
		errs = in.CheckMeta(in.name, *md, true)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var notes []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"ownerReferences", len(md.OwnerReferences) > 0}, {"finalizers", len(md.Finalizers) > 0}, {"deletionTimestamp", md.DeletionTimestamp != nil}} {
		if f.set {
			notes = append(notes, "dropped metadata."+f.name+": it belongs to the source object and its controller")
		}
	}
	return notes, nil
}

func metaOutput(md *metav1.ObjectMeta) *object {
	o := newObject()
	o.set("name", str(md.Name))
	if md.Namespace != "" {
		o.set("namespace", str(md.Namespace))
	}
	annotations := maps.Clone(md.Annotations)
	delete(annotations, lastApplied)
	if len(md.Labels) > 0 {
		o.set("labels", pairs(md.Labels))
	}
	if len(annotations) > 0 {
		o.set("annotations", pairs(annotations))
	}
	return o
}

// pairs renders a string map in key order.
func pairs(m map[string]string) *goyaml.Node {
	n := &goyaml.Node{Kind: goyaml.MappingNode}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		n.Content = append(n.Content, str(k), str(m[k]))
	}
	return n
}

// ref names an object for messages and comments: "team-ml/chatbot".
func ref(md *metav1.ObjectMeta) string {
	if md.Namespace == "" {
		return md.Name
	}
	return md.Namespace + "/" + md.Name
}
