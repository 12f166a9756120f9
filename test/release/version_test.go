// Package release_test checks that the release version has one source, the VERSION file at
// the repository root, and that everything naming a version of llmbudget names that one:
// the image tag deploy/ installs, the Helm chart's version and appVersion, the CHANGELOG,
// and the versioned URLs and image references in the manifests and documents.
// The program's default version (what go install reports) is checked here too; the Makefile,
// the Dockerfile and `make image` read VERSION themselves (the image test
// checks that the binary in the image reports it).
package release_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// semver is the form of VERSION: MAJOR.MINOR.PATCH with an optional pre-release.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// version is the content of VERSION without its trailing newline.
func version(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	require.NoError(t, err)
	v := strings.TrimSuffix(string(data), "\n")
	require.Regexp(t, semver, v, "VERSION holds one semantic version and a newline")
	return v
}

// readYAML decodes the YAML file at rel (relative to the repository root) into v.
func readYAML(t *testing.T, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, v), rel)
}

func TestTheManifestsInstallTheImageOfVERSION(t *testing.T) {
	var k struct {
		Images []struct {
			Name   string `json:"name"`
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	readYAML(t, "deploy/base/kustomization.yaml", &k)
	require.Len(t, k.Images, 1)
	assert.Equal(t, "ghcr.io/llmbudget/llmbudget", k.Images[0].Name)
	assert.Equal(t, version(t), k.Images[0].NewTag, "deploy/base/kustomization.yaml images[0].newTag")
}

// An overlay's images: transformer does not reach into a component, and a base's does not reach
// a component an overlay adds: each kustomization that lists a file running the image tags it.
func TestEveryKustomizationThatRunsTheImageTagsItAsVERSION(t *testing.T) {
	const image = "image: ghcr.io/llmbudget/llmbudget"
	kustomizations, err := filepath.Glob(filepath.Join(root, "deploy", "*", "*", "kustomization.yaml"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(root, "deploy", "*", "kustomization.yaml"))
	require.NoError(t, err)
	checked := 0
	for _, path := range append(kustomizations, more...) {
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		var k struct {
			Resources []string `json:"resources"`
			Images    []struct {
				Name   string `json:"name"`
				NewTag string `json:"newTag"`
			} `json:"images"`
		}
		readYAML(t, rel, &k)
		runs := false
		for _, r := range k.Resources {
			data, err := os.ReadFile(filepath.Join(filepath.Dir(path), r))
			runs = runs || err == nil && strings.Contains(string(data), image)
		}
		if !runs {
			continue
		}
		checked++
		tags := map[string]string{}
		for _, i := range k.Images {
			tags[i.Name] = i.NewTag
		}
		assert.Equal(t, version(t), tags["ghcr.io/llmbudget/llmbudget"], "%s images: newTag", rel)
	}
	assert.GreaterOrEqual(t, checked, 3, "deploy/base and the spend-writer and authz components run the image")
}

func TestTheChartIsVersionedAsVERSION(t *testing.T) {
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, "deploy/helm/llmbudget/Chart.yaml", &chart)
	assert.Equal(t, version(t), chart.Version, "Chart.yaml version")
	assert.Equal(t, version(t), chart.AppVersion, "Chart.yaml appVersion")

	var values struct {
		Image struct {
			Tag string `json:"tag"`
		} `json:"image"`
	}
	readYAML(t, "deploy/helm/llmbudget/values.yaml", &values)
	assert.Empty(t, values.Image.Tag, "values.yaml image.tag stays empty so that the chart installs its appVersion")
}

func TestTheChangelogHasAnEntryForVERSION(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "\n## [Unreleased]\n", "Keep a Changelog: an Unreleased section comes first")
	released := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(version(t)) + `\] - \d{4}-\d{2}-\d{2}$`)
	upcoming := "The next release is " + version(t) + " (`VERSION`)"
	assert.True(t, released.MatchString(text) || strings.Contains(text, upcoming),
		"CHANGELOG.md has a dated heading for %s, or its Unreleased section announces it", version(t))
}

// versionRefs finds versions of llmbudget named in text: kustomize remote refs
// (`//deploy?ref=v0.1.0`) and image references (`ghcr.io/llmbudget/llmbudget:0.1.0`).
var versionRefs = regexp.MustCompile(`llmbudget//[^\s?]*\?ref=v([0-9][0-9A-Za-z.-]*)` +
	`|ghcr\.io/llmbudget/llmbudget:([0-9][0-9A-Za-z.-]*)`)

func TestEveryVersionedReferenceNamesVERSION(t *testing.T) {
	var files []string
	for _, pattern := range []string{
		"*.md", "docs/*.md", "Dockerfile",
		"deploy/*.yaml", "deploy/*/*.yaml", "deploy/*/*/*.yaml", "deploy/helm/llmbudget/*.md",
	} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range versionRefs.FindAllStringSubmatch(string(data), -1) {
			found++
			assert.Equal(t, version(t), m[1]+m[2], "%s: %s", f, m[0])
		}
	}
	assert.NotZero(t, found, "the documents show versioned references; the pattern must still find them")
}

// A plain `go build` or `go install` sets no -ldflags, so the program's own default is what it reports.
func TestTheProgramReportsVERSIONWithoutLdflags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "hooks/llmbudget/version.go"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^var version = "([^"]*)"$`).FindStringSubmatch(string(data))
	require.NotNil(t, m, "hooks/llmbudget/version.go declares var version = \"...\"")
	assert.Equal(t, version(t), m[1], "hooks/llmbudget/version.go's default version")
}
