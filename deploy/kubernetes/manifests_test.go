package kubernetes

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const namespace = "volanogo"

// kinds maps each kind the manifests may use to its apiVersion and a
// constructor of its Go type. Any other kind is an error.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Namespace":             {"v1", func() any { return &corev1.Namespace{} }},
	"Service":               {"v1", func() any { return &corev1.Service{} }},
	"ConfigMap":             {"v1", func() any { return &corev1.ConfigMap{} }},
	"PersistentVolumeClaim": {"v1", func() any { return &corev1.PersistentVolumeClaim{} }},
	"Pod":                   {"v1", func() any { return &corev1.Pod{} }},
	"Deployment":            {"apps/v1", func() any { return &appsv1.Deployment{} }},
	"Job":                   {"batch/v1", func() any { return &batchv1.Job{} }},
	"PodMonitor":            {"monitoring.coreos.com/v1", func() any { return &monitoringv1.PodMonitor{} }},
}

// object is one decoded manifest document.
type object struct {
	source string // file:document number, for messages
	kind   string
	obj    any
}

// splitDocuments splits a multi-document YAML stream on its "---" lines and
// drops documents that hold only comments and blank lines.
func splitDocuments(data string) []string {
	var docs []string
	var cur strings.Builder
	flush := func() {
		if hasContent(cur.String()) {
			docs = append(docs, cur.String())
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t") {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

func hasContent(doc string) bool {
	for line := range strings.Lines(doc) {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// decodeStrict decodes one YAML document into the API type named by its
// kind, as strictly as the API server's strict field validation: unknown
// fields, duplicate keys and fields in the wrong case are errors.
func decodeStrict(doc string) (string, any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return "", nil, fmt.Errorf("reading kind: %w", err)
	}
	k, ok := kinds[tm.Kind]
	if !ok {
		return tm.Kind, nil, fmt.Errorf("unknown kind %q", tm.Kind)
	}
	if tm.APIVersion != k.apiVersion {
		return tm.Kind, nil, fmt.Errorf("%s: apiVersion %q, want %q", tm.Kind, tm.APIVersion, k.apiVersion)
	}
	// YAMLToJSONStrict rejects duplicate keys; kjson.UnmarshalStrict
	// rejects unknown fields and case-insensitive matches (encoding/json
	// alone would accept "Replicas" for "replicas").
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return tm.Kind, nil, err
	}
	obj := k.new()
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return tm.Kind, nil, err
	}
	if len(strict) > 0 {
		return tm.Kind, nil, fmt.Errorf("%s: %w", tm.Kind, errorsJoin(strict))
	}
	return tm.Kind, obj, nil
}

func errorsJoin(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// manifestFiles are the manifests under this directory: every *.yaml but
// the kustomization files.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".yaml" && d.Name() != "kustomization.yaml" {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// decodeAll decodes every document of a YAML stream; source names it.
func decodeAll(t *testing.T, source, data string) []object {
	t.Helper()
	docs := splitDocuments(data)
	require.NotEmpty(t, docs, "%s has no document", source)
	var objs []object
	for i, doc := range docs {
		src := fmt.Sprintf("%s#%d", source, i+1)
		kind, obj, err := decodeStrict(doc)
		require.NoError(t, err, src)
		objs = append(objs, object{source: src, kind: kind, obj: obj})
	}
	return objs
}

// render is `kubectl kustomize dir`: the objects the kustomization in dir
// makes, each decoded strictly.
func render(t *testing.T, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize %s", dir)
	out, err := m.AsYaml()
	require.NoError(t, err, "kustomize %s", dir)
	return decodeAll(t, "kustomize "+dir, string(out))
}

// loadManifests is what `kubectl apply -k deploy/kubernetes` applies.
func loadManifests(t *testing.T) []object {
	t.Helper()
	return render(t, ".")
}

// find returns the one object of type T with the given name.
func find[T metav1.Object](t *testing.T, objs []object, name string) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.obj.(T); ok && v.GetName() == name {
			found = append(found, v)
		}
	}
	require.Len(t, found, 1, "want exactly one %T named %q", *new(T), name)
	return found[0]
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := loadManifests(t)
	seen := map[string]string{}
	for _, o := range objs {
		meta := o.obj.(metav1.Object)
		assert.Empty(t, validation.IsDNS1123Subdomain(meta.GetName()), "%s: name %q", o.source, meta.GetName())
		key := o.kind + "/" + meta.GetName()
		assert.NotContains(t, seen, key, "%s: %s also in %s", o.source, key, seen[key])
		seen[key] = o.source
		if o.kind == "Namespace" {
			assert.Equal(t, namespace, meta.GetName(), o.source)
		} else {
			assert.Equal(t, namespace, meta.GetNamespace(), "%s: namespace", o.source)
		}
		for k, v := range meta.GetLabels() {
			assert.Empty(t, validation.IsQualifiedName(k), "%s: label key %q", o.source, k)
			assert.Empty(t, validation.IsValidLabelValue(v), "%s: label value %q", o.source, v)
		}
	}
	assert.ElementsMatch(t, []string{"Namespace/volanogo", "Deployment/volanogo-server", "Service/volanogo-server",
		"Job/volanogo-swarm", "ConfigMap/" + runConfigMap(t, objs).Name}, slices.Collect(maps.Keys(seen)))
}

// runConfigMap is the run's ConfigMap that swarm/ generates from run.env:
// volanogo-run, with the hash of its contents as kustomize appends it.
func runConfigMap(t *testing.T, objs []object) *corev1.ConfigMap {
	t.Helper()
	var found []*corev1.ConfigMap
	for _, o := range objs {
		if cm, ok := o.obj.(*corev1.ConfigMap); ok && strings.HasPrefix(cm.Name, "volanogo-run-") {
			found = append(found, cm)
		}
	}
	require.Len(t, found, 1, "one generated ConfigMap volanogo-run-<hash>")
	return found[0]
}

// TestApplyOrder: `kubectl apply -k deploy/kubernetes` applies the objects
// in the order kustomize prints them: the namespace first, the ConfigMap
// before the Job whose pods read it, and the Job after the server. Before,
// the ConfigMap was made by hand after the Job, whose pods then waited in
// CreateContainerConfigError.
func TestApplyOrder(t *testing.T) {
	objs := loadManifests(t)
	at := map[string]int{}
	for i, o := range objs {
		at[o.kind] = i
	}
	assert.Equal(t, 0, at["Namespace"], "the namespace first")
	assert.Less(t, at["ConfigMap"], at["Job"], "the ConfigMap before the Job")
	assert.Less(t, at["Deployment"], at["Job"], "the server before the swarm")
	// Every ConfigMap the Job reads is one the kustomization makes.
	cm := runConfigMap(t, objs)
	job := find[*batchv1.Job](t, objs, "volanogo-swarm")
	refs := 0
	for _, c := range job.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				assert.Equal(t, cm.Name, e.ValueFrom.ConfigMapKeyRef.Name, e.Name)
				assert.Contains(t, cm.Data, e.ValueFrom.ConfigMapKeyRef.Key, e.Name)
				refs++
			}
		}
	}
	assert.Equal(t, 2, refs, "RUN_ID and START_AT")
}

// TestPodMonitor: the PodMonitor (the Prometheus Operator's type, decoded
// strictly) scrapes the server's pods on their metrics port and path.
func TestPodMonitor(t *testing.T) {
	objs := render(t, "monitoring")
	pm := find[*monitoringv1.PodMonitor](t, objs, "volanogo-server")
	assert.Equal(t, namespace, pm.Namespace)
	dep := find[*appsv1.Deployment](t, loadManifests(t), "volanogo-server")
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(dep.Spec.Template.Labels)), "the PodMonitor selects the server's pods")
	require.Len(t, pm.Spec.PodMetricsEndpoints, 1)
	ep := pm.Spec.PodMetricsEndpoints[0]
	require.NotNil(t, ep.Port)
	assert.EqualValues(t, 8002, containerPort(t, dep.Spec.Template.Spec.Containers[0], intstr.FromString(*ep.Port)))
	assert.Equal(t, "/metrics", ep.Path)
	// Not in the top kustomization: a cluster without the operator refuses the kind.
	for _, o := range loadManifests(t) {
		assert.NotEqual(t, "PodMonitor", o.kind)
	}
}

// requireGoMemLimit: GOMEMLIMIT is the container's own memory limit, by
// the downward API, never a figure that drifts from it.
func requireGoMemLimit(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
	require.GreaterOrEqual(t, i, 0, "%s: no GOMEMLIMIT", where)
	e := c.Env[i]
	assert.Empty(t, e.Value, where)
	require.NotNil(t, e.ValueFrom, where)
	require.NotNil(t, e.ValueFrom.ResourceFieldRef, where)
	assert.Equal(t, "limits.memory", e.ValueFrom.ResourceFieldRef.Resource, where)
	assert.Equal(t, c.Name, e.ValueFrom.ResourceFieldRef.ContainerName, where)
	_, ok := c.Resources.Limits[corev1.ResourceMemory]
	assert.True(t, ok, "%s: GOMEMLIMIT from a memory limit that is set", where)
}

// TestFilesDecodeStrictly decodes the files themselves, not only what
// kustomize makes of them: `kubectl apply -f` of one file must work too,
// and a duplicate key is caught here before kustomize picks one.
func TestFilesDecodeStrictly(t *testing.T) {
	for _, f := range manifestFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		decodeAll(t, f, string(data))
	}
}

// TestKustomizations renders the whole and each part alone: the server's
// directory makes the namespace and the server, the swarm's the Job, and
// the whole is the two together.
func TestKustomizations(t *testing.T) {
	keys := func(objs []object) []string {
		var k []string
		for _, o := range objs {
			k = append(k, o.kind+"/"+o.obj.(metav1.Object).GetName())
		}
		return k
	}
	server := keys(render(t, "server"))
	assert.ElementsMatch(t, []string{"Namespace/volanogo", "Deployment/volanogo-server", "Service/volanogo-server"}, server)
	swarmObjs := render(t, "swarm")
	swarm := keys(swarmObjs)
	assert.ElementsMatch(t, []string{"Job/volanogo-swarm", "ConfigMap/" + runConfigMap(t, swarmObjs).Name}, swarm)
	assert.ElementsMatch(t, append(server, swarm...), keys(loadManifests(t)))
}

// imageRepository is the image the release publishes (.goreleaser.yaml).
const imageRepository = "ghcr.io/volanogo/volanogo"

// TestImagePinned checks that every volanogo container runs the release's
// image at one version, never a floating tag, the same in the files and in
// the image component, and that the release configuration publishes that
// repository.
func TestImagePinned(t *testing.T) {
	data, err := os.ReadFile("image/kustomization.yaml")
	require.NoError(t, err)
	var comp struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Images     []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &comp))
	assert.Equal(t, "Component", comp.Kind)
	require.Len(t, comp.Images, 1)
	pin := comp.Images[0]
	assert.Equal(t, imageRepository, pin.Name)
	assert.Equal(t, imageRepository, pin.NewName)
	assert.Regexp(t, `^[0-9]+\.[0-9]+\.[0-9]+$`, pin.NewTag, "a release version, as GoReleaser tags the image")
	want := imageRepository + ":" + pin.NewTag

	check := func(source string, objs []object) (n int) {
		for _, o := range objs {
			spec := podSpec(o.obj)
			if spec == nil {
				continue
			}
			for _, c := range spec.Containers {
				assert.Equal(t, want, c.Image, "%s: container %s", source, c.Name)
				n++
			}
		}
		return n
	}
	rendered := check("kustomize", loadManifests(t))
	assert.Equal(t, 2, rendered, "the server and the swarm")
	inFiles := 0
	for _, f := range manifestFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		inFiles += check(f, decodeAll(t, f, string(data)))
	}
	assert.Equal(t, rendered, inFiles)

	// The release publishes that repository, tagged with the version.
	data, err = os.ReadFile("../../.goreleaser.yaml")
	require.NoError(t, err)
	var release struct {
		Dockers []struct {
			Images []string `json:"images"`
			Tags   []string `json:"tags"`
		} `json:"dockers_v2"`
	}
	require.NoError(t, yaml.Unmarshal(data, &release))
	require.Len(t, release.Dockers, 1)
	assert.Equal(t, []string{imageRepository}, release.Dockers[0].Images)
	assert.Contains(t, release.Dockers[0].Tags, "{{ .Version }}")
}

// podSpec returns the pod template of a Deployment or Job, or a Pod's spec.
func podSpec(obj any) *corev1.PodSpec {
	switch v := obj.(type) {
	case *appsv1.Deployment:
		return &v.Spec.Template.Spec
	case *batchv1.Job:
		return &v.Spec.Template.Spec
	case *corev1.Pod:
		return &v.Spec
	}
	return nil
}

func TestStrictDecodingRejectsMistakes(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
spec:
  %s
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: x
          image: x
`
	_, _, err := decodeStrict(fmt.Sprintf(deployment, "replicas: 1"))
	require.NoError(t, err, "the well-formed base manifest must decode")

	for name, doc := range map[string]string{
		"misspelt field":       fmt.Sprintf(deployment, "replica: 1"),
		"field in wrong case":  fmt.Sprintf(deployment, "Replicas: 1"),
		"duplicate field":      fmt.Sprintf(deployment, "replicas: 1\n  replicas: 2"),
		"field at wrong level": fmt.Sprintf(deployment, "containers: []"),
		"wrong value type":     fmt.Sprintf(deployment, "replicas: one"),
		"unknown kind":         "apiVersion: v1\nkind: Deploymnet\nmetadata:\n  name: x\n",
		"wrong apiVersion":     "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: x\n",
		"misspelt Job field": `apiVersion: batch/v1
kind: Job
metadata:
  name: x
spec:
  completionmode: Indexed
  template:
    spec:
      containers: [{name: x, image: x}]
`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := decodeStrict(doc)
			if assert.Error(t, err) {
				t.Log(err)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	docs := splitDocuments("# header only\n---\na: 1\n--- # second\nb: 2\n---\n\n# trailing comment\n")
	assert.Equal(t, []string{"a: 1\n", "b: 2\n"}, docs)
	// "---" inside a value is not a separator.
	assert.Len(t, splitDocuments("a: |\n  ---\n  x\n"), 1)
}

// containerPort resolves a probe's or service's port (a number or a port
// name) against a container's ports.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Errorf("container %s has no port %s", c.Name, p.String())
	return 0
}

// requireResources checks that requests and limits are both set, and that
// no request exceeds its limit.
func requireResources(t *testing.T, where string, r corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, ok := r.Requests[name]
		assert.True(t, ok, "%s: no %s request", where, name)
		lim, ok := r.Limits[name]
		if name == corev1.ResourceCPU && !ok {
			continue // the swarm's: no CPU limit (TestSwarm)
		}
		assert.True(t, ok, "%s: no %s limit", where, name)
		assert.LessOrEqual(t, req.Cmp(lim), 0, "%s: %s request %s above limit %s", where, name, req.String(), lim.String())
	}
}

// requireHardened checks the pod and container security settings that every
// volanogo pod has: non-root, read-only root file system, no privileges.
func requireHardened(t *testing.T, where string, spec corev1.PodSpec) {
	t.Helper()
	require.NotNil(t, spec.SecurityContext, where)
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot, where)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot, where)
	for _, c := range spec.Containers {
		require.NotNil(t, c.SecurityContext, "%s: container %s", where, c.Name)
		sc := c.SecurityContext
		require.NotNil(t, sc.ReadOnlyRootFilesystem, "%s: container %s", where, c.Name)
		assert.True(t, *sc.ReadOnlyRootFilesystem, "%s: container %s", where, c.Name)
		require.NotNil(t, sc.AllowPrivilegeEscalation, "%s: container %s", where, c.Name)
		assert.False(t, *sc.AllowPrivilegeEscalation, "%s: container %s", where, c.Name)
		requireResources(t, where+" container "+c.Name, c.Resources)
	}
}

// requireVolumesDefined checks that every mount names a volume of the pod.
func requireVolumesDefined(t *testing.T, where string, spec corev1.PodSpec) {
	t.Helper()
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			assert.True(t, slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }),
				"%s: container %s mounts undefined volume %s", where, c.Name, m.Name)
		}
	}
}

var prometheusAnnotations = map[string]string{
	"prometheus.io/scrape": "true",
	"prometheus.io/port":   "8002",
	"prometheus.io/path":   "/metrics",
}

func TestServer(t *testing.T) {
	objs := loadManifests(t)
	dep := find[*appsv1.Deployment](t, objs, "volanogo-server")
	svc := find[*corev1.Service](t, objs, "volanogo-server")

	require.NotNil(t, dep.Spec.Replicas)
	assert.EqualValues(t, 1, *dep.Spec.Replicas)
	require.NotNil(t, dep.Spec.Selector)
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	require.NoError(t, err)
	podLabels := labels.Set(dep.Spec.Template.Labels)
	assert.True(t, sel.Matches(podLabels), "the Deployment's selector must match its pod template")

	pod := dep.Spec.Template.Spec
	requireHardened(t, "server", pod)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, []string{"serve", "--listen", ":8000", "--ws-listen", ":8080", "--metrics-listen", ":8002"}, c.Args)
	requireGoMemLimit(t, "server", c)
	// The server is Guaranteed: requests equal to limits, CPU included.
	assert.Equal(t, c.Resources.Requests, c.Resources.Limits, "server resources")
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, map[string]int32{"chat": 8000, "ws": 8080, "metrics": 8002}, ports)
	// The listen flags and the container ports agree.
	for flag, portName := range map[string]string{"--listen": "chat", "--ws-listen": "ws", "--metrics-listen": "metrics"} {
		port, err := strconv.Atoi(strings.TrimPrefix(flagValue(t, c.Args, flag), ":"))
		require.NoError(t, err, flag)
		assert.EqualValues(t, ports[portName], port, flag)
	}

	// The server answers its probes on the metrics listener.
	for name, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		require.NotNil(t, probe, name)
		require.NotNil(t, probe.HTTPGet, "%s is an HTTP probe", name)
		assert.Equal(t, name, probe.HTTPGet.Path)
		assert.EqualValues(t, 8002, containerPort(t, c, probe.HTTPGet.Port), name)
		assert.GreaterOrEqual(t, probe.TimeoutSeconds, int32(5), "%s: a loaded server answers slowly", name)
		assert.GreaterOrEqual(t, probe.FailureThreshold, int32(3), "%s: one slow answer must not end a run", name)
	}

	for k, v := range prometheusAnnotations {
		assert.Equal(t, v, dep.Spec.Template.Annotations[k], "pod template annotation %s", k)
		assert.Equal(t, v, svc.Annotations[k], "service annotation %s", k)
	}

	require.NotEmpty(t, svc.Spec.Selector)
	assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels),
		"the Service's selector %v must select the server's pods %v", svc.Spec.Selector, podLabels)
	svcPorts := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = p.Port
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		assert.Equal(t, p.Port, containerPort(t, c, target), "service port %s", p.Name)
	}
	assert.Equal(t, map[string]int32{"chat": 8000, "ws": 8080, "metrics": 8002}, svcPorts)
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// flagValue returns the argument that follows flag in args.
func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	i := slices.Index(args, flag)
	require.GreaterOrEqual(t, i, 0, "no %s in %v", flag, args)
	require.Less(t, i+1, len(args), "%s has no value", flag)
	return args[i+1]
}

func TestSwarm(t *testing.T) {
	objs := loadManifests(t)
	job := find[*batchv1.Job](t, objs, "volanogo-swarm")
	svc := find[*corev1.Service](t, objs, "volanogo-server")

	spec := job.Spec
	require.NotNil(t, spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *spec.CompletionMode)
	require.NotNil(t, spec.Completions)
	require.NotNil(t, spec.Parallelism)
	assert.EqualValues(t, 10, *spec.Completions)
	assert.Equal(t, *spec.Completions, *spec.Parallelism, "every shard runs at once")
	require.NotNil(t, spec.BackoffLimit)
	assert.EqualValues(t, 0, *spec.BackoffLimit, "a failed shard is not retried")
	assert.Equal(t, corev1.RestartPolicyNever, spec.Template.Spec.RestartPolicy)

	pod := spec.Template.Spec
	requireHardened(t, "swarm", pod)
	requireVolumesDefined(t, "swarm", pod)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, []string{"load", "--host", "volanogo-server", "--port", "8000", "--rooms", "5000", "--users", "20",
		"--count", "100", "--shard", "$(JOB_COMPLETION_INDEX)/10", "--start-at", "$(START_AT)", "--run-id", "$(RUN_ID)",
		"--server-metrics", "http://volanogo-server:8002/metrics", "--label", "k8s", "-o", "-"}, c.Args)

	// Mark's text log (--file volano-mark.log) goes to the working
	// directory: it must be writable, and not shared by the shards.
	require.NotEmpty(t, c.WorkingDir, "the working directory of a read-only container must be a writable mount")
	assert.True(t, slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		return m.MountPath == c.WorkingDir && !m.ReadOnly && i >= 0 && pod.Volumes[i].EmptyDir != nil
	}), "working directory %s is not a writable emptyDir mount", c.WorkingDir)

	// The shard count is the job's completion count, and the swarm dials
	// the server's Service on its chat port.
	assert.Equal(t, fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", *spec.Completions), flagValue(t, c.Args, "--shard"))
	assert.Equal(t, svc.Name, flagValue(t, c.Args, "--host"))
	chat := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "chat" })
	require.GreaterOrEqual(t, chat, 0)
	assert.Equal(t, strconv.Itoa(int(svc.Spec.Ports[chat].Port)), flagValue(t, c.Args, "--port"))
	// Each shard reads the server's CPU from the Service's metrics port.
	metricsPort := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" })
	require.GreaterOrEqual(t, metricsPort, 0)
	assert.Equal(t, fmt.Sprintf("http://%s:%d/metrics", svc.Name, svc.Spec.Ports[metricsPort].Port), flagValue(t, c.Args, "--server-metrics"))
	// Each shard's result document is the JSON line on its standard
	// output, which `kubectl logs` reads back.
	assert.Equal(t, "-", flagValue(t, c.Args, "-o"))
	// One run per pod: one document per log.
	assert.NotContains(t, c.Args, "--serve")
	assert.NotContains(t, c.Args, "-runs")
	assert.NotContains(t, c.Args, "--runs")

	// --rooms is the whole run's: 5,000 rooms x 20 users = 100,000 users,
	// 10,000 a shard.
	rooms, err := strconv.Atoi(flagValue(t, c.Args, "--rooms"))
	require.NoError(t, err)
	users, err := strconv.Atoi(flagValue(t, c.Args, "--users"))
	require.NoError(t, err)
	assert.Equal(t, 100_000, rooms*users)
	assert.Equal(t, 10_000, rooms*users/int(*spec.Completions))

	// Every $(VAR) in the arguments is an environment variable of the
	// container, or Kubernetes would pass it through unexpanded.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, a := range c.Args {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			assert.Contains(t, env, m[1], "argument %q uses an undefined variable", a)
		}
	}
	cm := runConfigMap(t, objs)
	for _, name := range []string{"RUN_ID", "START_AT"} {
		e := env[name]
		require.NotNil(t, e.ValueFrom, name)
		require.NotNil(t, e.ValueFrom.ConfigMapKeyRef, name)
		assert.Equal(t, cm.Name, e.ValueFrom.ConfigMapKeyRef.Name, name)
		assert.Equal(t, name, e.ValueFrom.ConfigMapKeyRef.Key, name)
	}
	assert.NotEmpty(t, cm.Data["RUN_ID"])
	if at := cm.Data["START_AT"]; at != "" {
		_, err := time.Parse(time.RFC3339, at)
		assert.NoError(t, err, "START_AT is empty (no shared start) or an RFC 3339 time")
	}

	// Requests, and no CPU limit: throttling would stop a shard mid-period
	// and show as the server's latency.
	_, cpuLimit := c.Resources.Limits[corev1.ResourceCPU]
	assert.False(t, cpuLimit, "the swarm has no CPU limit")
	assert.False(t, c.Resources.Requests.Cpu().IsZero(), "the swarm requests its processors")
	requireGoMemLimit(t, "swarm", c)
	// The finished Job is cleaned up, after a day to copy the logs out.
	require.NotNil(t, spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	assert.GreaterOrEqual(t, *spec.TTLSecondsAfterFinished, int32(3600))
	if e, ok := env["JOB_COMPLETION_INDEX"]; ok {
		require.NotNil(t, e.ValueFrom)
		require.NotNil(t, e.ValueFrom.FieldRef)
		assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", e.ValueFrom.FieldRef.FieldPath)
	}

	// Shards prefer distinct nodes.
	require.NotNil(t, pod.Affinity)
	require.NotNil(t, pod.Affinity.PodAntiAffinity)
	spread := false
	for _, term := range pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		sel, err := metav1.LabelSelectorAsSelector(term.PodAffinityTerm.LabelSelector)
		require.NoError(t, err)
		if term.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && sel.Matches(labels.Set(spec.Template.Labels)) {
			spread = true
		}
	}
	assert.True(t, spread, "a preferred pod anti-affinity term over kubernetes.io/hostname must select the swarm's own pods")
}

// TestNoSharedVolume checks that nothing needs a volume that outlives a
// pod: the results leave the cluster through the pods' logs, so any
// cluster runs the swarm, whatever its storage classes.
func TestNoSharedVolume(t *testing.T) {
	for _, o := range loadManifests(t) {
		assert.NotEqual(t, "PersistentVolumeClaim", o.kind, o.source)
		if spec := podSpec(o.obj); spec != nil {
			for _, v := range spec.Volumes {
				assert.NotNil(t, v.EmptyDir, "%s: volume %s is not the pod's own", o.source, v.Name)
			}
		}
	}
}

func TestEveryPodSpecIsSound(t *testing.T) {
	for _, o := range loadManifests(t) {
		spec := podSpec(o.obj)
		if spec == nil {
			continue
		}
		if job, ok := o.obj.(*batchv1.Job); ok {
			assert.Contains(t, []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure}, spec.RestartPolicy, o.source)
			assert.NotNil(t, job.Spec.ActiveDeadlineSeconds, "%s: a job without a deadline can hang", o.source)
		}
		requireVolumesDefined(t, o.source, *spec)
		for _, c := range spec.Containers {
			assert.NotEmpty(t, c.Image, o.source)
			for _, p := range c.Ports {
				assert.Empty(t, validation.IsValidPortNum(int(p.ContainerPort)), "%s: port %d", o.source, p.ContainerPort)
				assert.Empty(t, validation.IsValidPortName(p.Name), "%s: port name %q", o.source, p.Name)
			}
		}
	}
}

func TestReadmeCoversEveryManifest(t *testing.T) {
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(data)
	for _, f := range manifestFiles(t) {
		assert.True(t, strings.Contains(readme, filepath.Base(f)), "README.md does not mention %s", f)
	}
	for _, s := range []string{"swarm/run.env", "RUN_ID=", "START_AT=", "apply -k deploy/kubernetes/monitoring", "--shard", "--start-at", "--run-id",
		"ip_local_port_range", "file-max", "kubectl kustomize deploy/kubernetes", "apply -k deploy/kubernetes/server",
		"apply -k deploy/kubernetes/swarm", "kubectl -n volanogo logs", "volanogo report", "--server-metrics",
		"/healthz", "/readyz", imageRepository} {
		assert.True(t, strings.Contains(readme, s), "README.md does not mention %q", s)
	}
}
