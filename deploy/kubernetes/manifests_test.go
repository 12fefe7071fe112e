package kubernetes

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
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

// loadManifests decodes every document of every *.yaml file here.
func loadManifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var objs []object
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		docs := splitDocuments(string(data))
		require.NotEmpty(t, docs, "%s has no document", f)
		for i, doc := range docs {
			src := fmt.Sprintf("%s#%d", f, i+1)
			kind, obj, err := decodeStrict(doc)
			require.NoError(t, err, src)
			objs = append(objs, object{source: src, kind: kind, obj: obj})
		}
	}
	return objs
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
	for _, k := range []string{"Namespace/volanogo", "Deployment/volanogo-server", "Service/volanogo-server",
		"PersistentVolumeClaim/volanogo-results", "Job/volanogo-swarm", "Job/volanogo-report"} {
		assert.Contains(t, seen, k)
	}
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

// requireMountsClaim checks that the pod's one container mounts the
// persistent volume claim at path.
func requireMountsClaim(t *testing.T, where string, spec corev1.PodSpec, claim, path string) {
	t.Helper()
	require.Len(t, spec.Containers, 1, where)
	var volume string
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			volume = v.Name
		}
	}
	require.NotEmpty(t, volume, "%s: no volume for claim %s", where, claim)
	i := slices.IndexFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume })
	require.GreaterOrEqual(t, i, 0, "%s: volume %s not mounted", where, volume)
	assert.Equal(t, path, spec.Containers[0].VolumeMounts[i].MountPath, where)
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
	"prometheus.io/port":   "9090",
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
	assert.Equal(t, "ghcr.io/volanogo/volanogo:latest", c.Image)
	assert.Equal(t, []string{"serve", "--listen", ":8000", "--ws-listen", ":8080", "--metrics-listen", ":9090"}, c.Args)
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, map[string]int32{"chat": 8000, "ws": 8080, "metrics": 9090}, ports)
	// The listen flags and the container ports agree.
	for flag, portName := range map[string]string{"--listen": "chat", "--ws-listen": "ws", "--metrics-listen": "metrics"} {
		port, err := strconv.Atoi(strings.TrimPrefix(flagValue(t, c.Args, flag), ":"))
		require.NoError(t, err, flag)
		assert.EqualValues(t, ports[portName], port, flag)
	}

	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.TCPSocket, "readiness is a TCP probe")
	assert.EqualValues(t, 8000, containerPort(t, c, c.ReadinessProbe.TCPSocket.Port))
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.LivenessProbe.HTTPGet, "liveness is an HTTP probe")
	assert.Equal(t, "/metrics", c.LivenessProbe.HTTPGet.Path)
	assert.EqualValues(t, 9090, containerPort(t, c, c.LivenessProbe.HTTPGet.Port))

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
	assert.Equal(t, map[string]int32{"chat": 8000, "ws": 8080, "metrics": 9090}, svcPorts)
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
	pvc := find[*corev1.PersistentVolumeClaim](t, objs, "volanogo-results")

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
	requireMountsClaim(t, "swarm", pod, pvc.Name, "/results")
	c := pod.Containers[0]
	assert.Equal(t, []string{"load", "--host", "volanogo-server", "--port", "8000", "--rooms", "5000", "--users", "20",
		"--count", "100", "--shard", "$(JOB_COMPLETION_INDEX)/10", "--start-at", "$(START_AT)", "--run-id", "$(RUN_ID)",
		"--label", "k8s", "-o", "/results/"}, c.Args)

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
	for _, name := range []string{"RUN_ID", "START_AT"} {
		e := env[name]
		require.NotNil(t, e.ValueFrom, name)
		require.NotNil(t, e.ValueFrom.ConfigMapKeyRef, name)
		assert.Equal(t, "volanogo-run", e.ValueFrom.ConfigMapKeyRef.Name, name)
		assert.Equal(t, name, e.ValueFrom.ConfigMapKeyRef.Key, name)
	}
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

func TestResultsAndReport(t *testing.T) {
	objs := loadManifests(t)
	pvc := find[*corev1.PersistentVolumeClaim](t, objs, "volanogo-results")
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, pvc.Spec.AccessModes)
	assert.True(t, resource.MustParse("1Gi").Equal(pvc.Spec.Resources.Requests[corev1.ResourceStorage]))

	job := find[*batchv1.Job](t, objs, "volanogo-report")
	pod := job.Spec.Template.Spec
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	requireHardened(t, "report", pod)
	requireVolumesDefined(t, "report", pod)
	requireMountsClaim(t, "report", pod, pvc.Name, "/results")
	assert.Equal(t, []string{"report", "/results", "--format", "html", "-o", "/results/report.html"}, pod.Containers[0].Args)

	fetch := find[*corev1.Pod](t, objs, "volanogo-results-fetch")
	requireHardened(t, "results-fetch", fetch.Spec)
	requireMountsClaim(t, "results-fetch", fetch.Spec, pvc.Name, "/results")
}

func TestEveryPodSpecIsSound(t *testing.T) {
	for _, o := range loadManifests(t) {
		var spec *corev1.PodSpec
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			spec = &v.Spec.Template.Spec
		case *batchv1.Job:
			spec = &v.Spec.Template.Spec
			assert.Contains(t, []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure}, spec.RestartPolicy, o.source)
			assert.NotNil(t, v.Spec.ActiveDeadlineSeconds, "%s: a job without a deadline can hang", o.source)
		case *corev1.Pod:
			spec = &v.Spec
		default:
			continue
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
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		assert.True(t, strings.Contains(readme, f), "README.md does not mention %s", f)
	}
	for _, s := range []string{"create configmap volanogo-run --from-literal=RUN_ID=", "--shard", "--start-at", "--run-id",
		"ip_local_port_range", "file-max", "kubectl cp", "volanogo report", "ghcr.io/volanogo/volanogo:latest"} {
		assert.True(t, strings.Contains(readme, s), "README.md does not mention %q", s)
	}
}
