package decode

import kjson "sigs.k8s.io/json"

// Unique is Lenient that also refuses a member repeated within one object, as the API server does: for a related
// object, whose unknown members are Kubernetes' and none of ours, a repeated member would otherwise be read
// last-wins, and a crafted request could hide one value behind another.
func Unique(data []byte, v any, root string) error {
	strict, err := kjson.UnmarshalStrict(data, v, kjson.DisallowDuplicateFields)
	if err != nil {
		return describe(root, data, v, err)
	}
	return strictErrors(root, strict)
}
