package migrate

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	goyaml "sigs.k8s.io/yaml/goyaml.v3"
)

// lastApplied is written by kubectl apply; it describes the old object and
// would make the next kubectl apply of the new one compute a wrong diff.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// objectMetaFields are the fields of metav1.ObjectMeta. The API server sets
// most of them; an object exported with kubectl get -o yaml carries them all.
var objectMetaFields = []string{
	"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
	"annotations", "ownerReferences", "finalizers", "managedFields",
}

// meta is what a converted object keeps of its source's metadata.
type meta struct {
	name, namespace string
	labels          *mapping
	annotations     *mapping
}

// readMeta reads metadata strictly. The fields the API server owns (uid,
// resourceVersion, managedFields, ...) are dropped silently; the ones that
// tie the object to its old controller are dropped with a note.
func readMeta(root *mapping) (meta, []string, error) {
	md, err := asMapping(root.value["metadata"], "metadata")
	if err != nil {
		return meta{}, nil, err
	}
	if err := md.allow(objectMetaFields...); err != nil {
		return meta{}, nil, err
	}
	var m meta
	if m.name, err = md.reqString("name"); err != nil {
		if _, ok, _ := md.optString("generateName"); ok {
			return meta{}, nil, errAt(md.key["name"], "metadata.name", "is required: a budget needs a fixed name (generateName is not enough)")
		}
		return meta{}, nil, err
	}
	if msgs := validation.IsDNS1123Subdomain(m.name); len(msgs) > 0 {
		return meta{}, nil, errAt(md.get("name"), "metadata.name", "%q is not a valid object name: %s", m.name, strings.Join(msgs, "; "))
	}
	if m.namespace, _, err = md.optString("namespace"); err != nil {
		return meta{}, nil, err
	}
	if msgs := validation.IsDNS1123Label(m.namespace); m.namespace != "" && len(msgs) > 0 {
		return meta{}, nil, errAt(md.get("namespace"), "metadata.namespace", "%q is not a valid namespace: %s", m.namespace, strings.Join(msgs, "; "))
	}
	if m.labels, err = md.stringMap("labels"); err != nil {
		return meta{}, nil, err
	}
	if m.annotations, err = md.stringMap("annotations"); err != nil {
		return meta{}, nil, err
	}
	var notes []string
	for _, f := range []string{"ownerReferences", "finalizers", "deletionTimestamp"} {
		if md.get(f) != nil {
			notes = append(notes, "dropped metadata."+f+": it belongs to the source object and its controller")
		}
	}
	return m, notes, nil
}

// output renders the kept metadata: name, namespace, labels and
// annotations, in their source order, without kubectl's last-applied copy.
func (m meta) output() *object {
	o := newObject()
	o.set("name", str(m.name))
	if m.namespace != "" {
		o.set("namespace", str(m.namespace))
	}
	if kv := pairs(m.labels, ""); len(kv.Content) > 0 {
		o.set("labels", kv)
	}
	if kv := pairs(m.annotations, lastApplied); len(kv.Content) > 0 {
		o.set("annotations", kv)
	}
	return o
}

func pairs(m *mapping, drop string) *goyaml.Node {
	n := &goyaml.Node{Kind: goyaml.MappingNode}
	for _, k := range m.keys {
		if k == drop {
			continue
		}
		n.Content = append(n.Content, str(k), str(deref(m.value[k]).Value))
	}
	return n
}

// ref names an object for messages and comments: "team-ml/chatbot".
func (m meta) ref() string {
	if m.namespace == "" {
		return m.name
	}
	return m.namespace + "/" + m.name
}
