package main

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layouts under test come from `make test-image`, which builds the image twice from the
// same commit and passes both here.
var (
	layoutDir   = os.Getenv("LLMBUDGET_IMAGE")
	againDir    = os.Getenv("LLMBUDGET_IMAGE_AGAIN")
	wantVersion = os.Getenv("LLMBUDGET_VERSION")
)

func requireLayouts(t *testing.T) {
	t.Helper()
	if layoutDir == "" || againDir == "" || wantVersion == "" {
		t.Skip("LLMBUDGET_IMAGE, LLMBUDGET_IMAGE_AGAIN and LLMBUDGET_VERSION unset: run `make test-image`")
	}
}

// tagged is the multi-platform index that the layout's index.json names with ref.
func tagged(t *testing.T, dir string) (v1.ImageIndex, v1.Descriptor) {
	t.Helper()
	root, err := layout.ImageIndexFromPath(dir)
	require.NoError(t, err)
	m, err := root.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1, "index.json names one entry")
	desc := m.Manifests[0]
	require.True(t, desc.MediaType.IsIndex(), "the entry is a multi-platform index, got %s", desc.MediaType)
	idx, err := root.ImageIndex(desc.Digest)
	require.NoError(t, err)
	return idx, desc
}

// images are the per-platform images of idx, by platform.
func images(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	require.NotEmpty(t, m.Manifests)
	out := map[string]v1.Image{}
	for _, d := range m.Manifests {
		require.NotNil(t, d.Platform, "every manifest of the index names its platform")
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		out[d.Platform.String()] = img
	}
	return out
}

// files reads the image's flattened file system: name to header and content.
func files(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	headers, contents := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, contents
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		headers[h.Name], contents[h.Name] = h, data
	}
}

func TestTheImageIsTaggedWithTheVersion(t *testing.T) {
	requireLayouts(t)
	_, desc := tagged(t, layoutDir)
	assert.Equal(t, wantVersion, desc.Annotations["org.opencontainers.image.ref.name"])
}

func TestTheImageRunsServeAsUser65532(t *testing.T) {
	requireLayouts(t)
	idx, _ := tagged(t, layoutDir)
	for platform, img := range images(t, idx) {
		t.Run(platform, func(t *testing.T) {
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, platform, cf.Platform().String(), "the config's platform is the index's")
			assert.Equal(t, "65532:65532", cf.Config.User)
			assert.Equal(t, []string{"/llmbudget"}, cf.Config.Entrypoint)
			assert.Equal(t, []string{"serve"}, cf.Config.Cmd)
			assert.Equal(t, wantVersion, cf.Config.Labels["org.opencontainers.image.version"])
		})
	}
}

func TestTheImageHoldsTheStaticBinaryAndNoShell(t *testing.T) {
	requireLayouts(t)
	idx, _ := tagged(t, layoutDir)
	for platform, img := range images(t, idx) {
		t.Run(platform, func(t *testing.T) {
			headers, contents := files(t, img)
			names := make([]string, 0, len(headers))
			for n := range headers {
				names = append(names, n)
			}
			sort.Strings(names)
			assert.Equal(t, []string{"etc", "etc/group", "etc/passwd", "llmbudget"}, names,
				"nothing but the binary and the user database: no shell")
			assert.Contains(t, string(contents["etc/passwd"]), "nonroot:x:65532:65532:")
			assert.EqualValues(t, tar.TypeDir, headers["etc"].Typeflag)
			assert.EqualValues(t, 0o755, headers["llmbudget"].Mode)

			bin, err := elf.NewFile(strings.NewReader(string(contents["llmbudget"])))
			require.NoError(t, err)
			for _, p := range bin.Progs {
				assert.NotEqual(t, elf.PT_INTERP, p.Type, "statically linked: the empty base has no dynamic loader")
			}
		})
	}
}

func TestTheBinaryInTheImageReportsTheVersion(t *testing.T) {
	requireLayouts(t)
	idx, _ := tagged(t, layoutDir)
	host := runtime.GOOS + "/" + runtime.GOARCH
	img, ok := images(t, idx)[host]
	if !ok {
		t.Skipf("the image has no %s variant to run here", host)
	}
	_, contents := files(t, img)
	bin := filepath.Join(t.TempDir(), "llmbudget")
	require.NoError(t, os.WriteFile(bin, contents["llmbudget"], 0o755))
	out, err := exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "llmbudget "+wantVersion+"\n", string(out))
}

func TestTwoBuildsOfOneCommitHaveTheSameDigest(t *testing.T) {
	requireLayouts(t)
	_, first := tagged(t, layoutDir)
	_, again := tagged(t, againDir)
	assert.Equal(t, first.Digest, again.Digest)
}

// dockerfile reads the instructions of the final stage of the repository's Dockerfile.
func dockerfile(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		instr, arg, ok := strings.Cut(strings.TrimSpace(s.Text()), " ")
		if !ok || strings.HasPrefix(instr, "#") {
			continue
		}
		if instr == "FROM" {
			clear(out) // only the last stage is the image
		}
		out[instr] = strings.TrimSpace(arg)
	}
	require.NoError(t, s.Err())
	return out
}

func TestTheDockerfileProducesTheSameLayout(t *testing.T) {
	d := dockerfile(t)
	assert.Equal(t, "scratch", d["FROM"], "an empty base, as make image")
	assert.Equal(t, user, d["USER"])
	var ep, c []string
	require.NoError(t, json.Unmarshal([]byte(d["ENTRYPOINT"]), &ep), d["ENTRYPOINT"])
	require.NoError(t, json.Unmarshal([]byte(d["CMD"]), &c), d["CMD"])
	assert.Equal(t, entrypoint, ep)
	assert.Equal(t, cmd, c)
	assert.Equal(t, port, d["EXPOSE"]+"/tcp")
}
