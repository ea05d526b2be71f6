// informer runs a client-go SharedInformer on pods against a kubeconfig, the way controllers consume an API
// server, and reports what it saw: every handler event as a JSON line on stdout while it runs, and at the end
// (SIGTERM/SIGINT, --duration elapsed or --until-file present) a JSON result with its final store.
// Tests compare that store with a direct list to prove a server's list+watch is consistent.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type event struct {
	Type            string `json:"type"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	InInitialList   bool   `json:"inInitialList,omitempty"`
	At              string `json:"at"`
}

type pod struct {
	Namespace       string            `json:"namespace"`
	Name            string            `json:"name"`
	ResourceVersion string            `json:"resourceVersion"`
	UID             string            `json:"uid"`
	Labels          map[string]string `json:"labels"`
}

type request struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	Status int    `json:"status"`
}

type result struct {
	Synced        bool      `json:"synced"`
	SyncedAfterMs int64     `json:"syncedAfterMs,omitempty"`
	Pods          []pod     `json:"pods"`
	Events        []event   `json:"events"`
	WatchListUsed bool      `json:"watchListUsed"`
	Requests      []request `json:"requests"`
	WatchErrors   []string  `json:"watchErrors"`
	StoppedBy     string    `json:"stoppedBy"`
}

type recorder struct {
	mu      sync.Mutex
	res     result
	out     *json.Encoder
	outMu   sync.Mutex
	started time.Time
}

type recordingTransport struct {
	rec  *recorder
	next http.RoundTripper
}

func (r *recorder) line(v any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	_ = r.out.Encode(v)
}

func (r *recorder) record(typ string, obj any, initial bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	e := event{Type: typ, Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion, InInitialList: initial, At: time.Now().UTC().Format(time.RFC3339Nano)}
	r.mu.Lock()
	r.res.Events = append(r.res.Events, e)
	r.mu.Unlock()
	r.line(map[string]any{"kind": "event", "event": e})
}

// RoundTrip records list and watch calls so tests can tell how the reflector talked to the server
// (a streaming watch-list carries sendInitialEvents=true).
func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := t.rec
	resp, err := t.next.RoundTrip(req)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	q := req.URL.Query()
	rq := request{Method: req.Method, URL: req.URL.RequestURI(), Status: status}
	r.mu.Lock()
	r.res.Requests = append(r.res.Requests, rq)
	if q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true" {
		r.res.WatchListUsed = true
	}
	r.mu.Unlock()
	r.line(map[string]any{"kind": "request", "request": rq})
	return resp, err
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig (required)")
	namespace := flag.String("namespace", "", "namespace to watch (default: all namespaces)")
	selector := flag.String("selector", "", "label selector")
	duration := flag.Duration("duration", 0, "stop after this long")
	untilFile := flag.String("until-file", "", "stop once this file exists")
	outPath := flag.String("out", "", "write the result JSON here (default: stdout as a final line)")
	watchList := flag.String("watch-list", "", "true/false: force client-go's WatchListClient feature gate")
	stdinStop := flag.Bool("stop-on-stdin-close", false, "stop when stdin reaches EOF (the parent process went away)")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "informer: --kubeconfig is required")
		os.Exit(2)
	}
	if *watchList != "" {
		// client-go reads its feature gates from the environment on first use.
		os.Setenv("KUBE_FEATURE_WatchListClient", *watchList)
	}

	rec := &recorder{out: json.NewEncoder(os.Stdout), started: time.Now()}
	rec.res.Pods, rec.res.Events, rec.res.Requests, rec.res.WatchErrors = []pod{}, []event{}, []request{}, []string{}

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "informer: %v\n", err)
		os.Exit(2)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "fleetgate-informer-test"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{rec: rec, next: rt} }
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "informer: %v\n", err)
		os.Exit(2)
	}

	opts := []informers.SharedInformerOption{}
	if *namespace != "" {
		opts = append(opts, informers.WithNamespace(*namespace))
	}
	if *selector != "" {
		sel := *selector
		opts = append(opts, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	inf := factory.Core().V1().Pods().Informer()
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		rec.mu.Lock()
		rec.res.WatchErrors = append(rec.res.WatchErrors, err.Error())
		rec.mu.Unlock()
		rec.line(map[string]any{"kind": "watchError", "error": err.Error()})
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { rec.record("ADDED", obj, initial) },
		UpdateFunc: func(_, obj any) { rec.record("MODIFIED", obj, false) },
		DeleteFunc: func(obj any) { rec.record("DELETED", obj, false) },
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stoppedBy := make(chan string, 4)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { s := <-sigs; stoppedBy <- "signal:" + s.String() }()
	if *duration > 0 {
		go func() { time.Sleep(*duration); stoppedBy <- "duration" }()
	}
	if *untilFile != "" {
		go func() {
			for {
				if _, err := os.Stat(*untilFile); err == nil {
					stoppedBy <- "until-file"
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}

	if *stdinStop {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); stoppedBy <- "stdin-closed" }()
	}

	factory.Start(ctx.Done())
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			ms := time.Since(rec.started).Milliseconds()
			rec.mu.Lock()
			rec.res.Synced, rec.res.SyncedAfterMs = true, ms
			rec.mu.Unlock()
			rec.line(map[string]any{"kind": "synced", "afterMs": ms})
		}
	}()

	why := <-stoppedBy
	cancel()
	factory.Shutdown()

	rec.mu.Lock()
	res := rec.res
	res.StoppedBy = why
	for _, o := range inf.GetStore().List() {
		p := o.(*corev1.Pod)
		labels := p.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		res.Pods = append(res.Pods, pod{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion, UID: string(p.UID), Labels: labels})
	}
	rec.mu.Unlock()
	sort.Slice(res.Pods, func(i, j int) bool {
		return strings.Compare(res.Pods[i].Namespace+"/"+res.Pods[i].Name, res.Pods[j].Namespace+"/"+res.Pods[j].Name) < 0
	})

	data, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(os.Stderr, "informer: %v\n", err)
		os.Exit(1)
	}
	if *outPath != "" {
		tmp := *outPath + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil || os.Rename(tmp, *outPath) != nil {
			fmt.Fprintf(os.Stderr, "informer: cannot write %s: %v\n", *outPath, err)
			os.Exit(1)
		}
	}
	rec.line(map[string]any{"kind": "result", "result": json.RawMessage(data)})
}
