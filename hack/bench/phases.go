package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startup: nine fresh kapis, each timed from exec to the first 200 on
// /readyz, then from POSTing the Widget CRD to the first Widget created.
// The slowest start is reported beside the median: a stall in some starts
// (a 100 ms readiness poll hit in half of them did) hides in the median.
func (b *bench) startup() error {
	const runs = 9
	var ready, crdToCR, startToCR []time.Duration
	for i := 0; i < runs; i++ {
		k, err := startKapi(b.bin, b.tmp, kapiArgs(b.sync)...)
		if err != nil {
			return err
		}
		ctx, cancel := withTimeout(time.Minute)
		d, err := installCRD(ctx, k, "default")
		firstCR := time.Now()
		cancel()
		if err := errors.Join(err, k.Stop()); err != nil {
			return err
		}
		ready = append(ready, k.Ready.Sub(k.Started))
		crdToCR = append(crdToCR, d)
		startToCR = append(startToCR, firstCR.Sub(k.Started))
	}
	b.r.atMost("start → /readyz 200 (median of 9 starts)", median(ready), "ms", 50)
	b.r.add("start → /readyz 200 (slowest of the 9)", percentile(ready, 100), "ms")
	b.r.atMost("POST CRD → first custom resource created (median of 9)", median(crdToCR), "ms", 50)
	b.r.add("POST CRD → first custom resource created (slowest of the 9)", percentile(crdToCR, 100), "ms")
	b.r.add("start → first custom resource created (median of 9)", median(startToCR), "ms")
	return nil
}

// manyCRDs: a kapi holding 200 CRDs (one group, a kind each) restarted 3
// times, each timed from exec to /readyz 200 and to a custom resource of
// the last CRD created. A kapi serves every stored CRD before it is ready,
// so a cost per CRD at start (or one growing with their number) shows here.
func (b *bench) manyCRDs() error {
	const n = 200
	k, err := startKapi(b.bin, b.tmp, kapiArgs(b.sync)...)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(5 * time.Minute)
	defer cancel()
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	for i := 0; i < n; i++ {
		if _, err := crds.Create(ctx, numberedCRD(i), metav1.CreateOptions{}); err != nil {
			return errors.Join(fmt.Errorf("create CRD %d: %w", i, err), k.Stop())
		}
	}
	if _, err := createNumbered(ctx, k, n-1); err != nil {
		return errors.Join(err, k.Stop())
	}
	if err := k.Stop(); err != nil {
		return err
	}
	var ready, toCR []time.Duration
	for r := 0; r < 3; r++ {
		again, err := startKapiIn(b.bin, filepath.Dir(k.DataDir), kapiArgs(b.sync)...)
		if err != nil {
			return err
		}
		created, err := createNumbered(ctx, again, n-1)
		if err := errors.Join(err, again.Stop()); err != nil {
			return err
		}
		ready = append(ready, again.Ready.Sub(again.Started))
		toCR = append(toCR, created.Sub(again.Started))
	}
	b.r.add("start → /readyz 200 with 200 CRDs stored (median of 3 restarts)", median(ready), "ms")
	b.r.add("start → a custom resource of the last of the 200 created (median of 3)", median(toCR), "ms")
	return nil
}

// numberedCRD is the Widget CRD as Widget<i>, plural widgets<i>.
func numberedCRD(i int) *apiextensionsv1.CustomResourceDefinition {
	crd := widgetCRD()
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{
		Plural: fmt.Sprintf("widgets%d", i), Singular: fmt.Sprintf("widget%d", i),
		Kind: fmt.Sprintf("Widget%d", i), ListKind: fmt.Sprintf("Widget%dList", i),
	}
	crd.Name = crd.Spec.Names.Plural + "." + widgetGroup
	return crd
}

// createNumbered creates an object of numberedCRD(i), retrying until its
// resource is served, and tells when it was created.
func createNumbered(ctx context.Context, k *kapiProc, i int) (time.Time, error) {
	body := fmt.Appendf(nil, `{"apiVersion":"%s/v1","kind":"Widget%d","metadata":{"generateName":"w-"},"spec":{"size":1}}`, widgetGroup, i)
	for {
		_, err := do(ctx, k.REST.Post().AbsPath(fmt.Sprintf("/apis/%s/v1/namespaces/default/widgets%d", widgetGroup, i)).Body(body))
		if err == nil {
			return time.Now(), nil
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("a Widget%d: %w", i, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// mainPhase is one kapi: idle memory with the CRD, then the objects'
// creates, reads, lists, updates, patches, applies, a watch run and the
// deletes, in that order.
func (b *bench) mainPhase() (err error) {
	k, err := startKapi(b.bin, b.tmp, kapiArgs(b.sync)...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Stop()) }()
	defer profileKapi(k, b.profDir, "main")()
	ctx, cancel := withTimeout(8 * time.Minute)
	defer cancel()
	const ns = "default"
	if _, err := installCRD(ctx, k, ns); err != nil {
		return err
	}
	if err := k.deleteWidget(ctx, ns, "first"); err != nil {
		return err
	}
	// Let start-up garbage be collected before the idle figure.
	time.Sleep(2 * time.Second)
	if rss, err := k.RSSMiB(); b.r.check("RSS idle", err) {
		b.r.atMost("RSS idle, CRD installed, no objects", rss.Total, "MiB", 30)
		b.r.add("RSS idle: of which anonymous (heap, stacks)", rss.Anon, "MiB")
		b.r.add("RSS idle: of which the binary's own mapped pages", rss.File, "MiB")
	}
	if b.floor != "" {
		if rss, err := libraryFloor(b.floor); b.r.check("RSS of the libraries alone", err) {
			b.r.add("RSS idle of a program that only links kapi's libraries (hack/libfloor)", rss.Total, "MiB")
			b.r.add("RSS idle of the libraries alone: of which anonymous", rss.Anon, "MiB")
			b.r.add("RSS idle of the libraries alone: of which the binary's own mapped pages", rss.File, "MiB")
		}
	}

	n := b.objects
	objects := thousands(n)
	name := func(i int) string { return fmt.Sprintf("w-%05d", i) }
	labels := func(i int) map[string]string {
		if i%100 == 0 {
			return map[string]string{sampleLabel: "yes"}
		}
		return nil
	}
	// The resourceVersion of each object's create, for its update.
	rvs := make([]string, n)
	create := func(i int) error {
		obj, err := k.createWidget(ctx, ns, name(i), labels(i))
		if err != nil {
			return err
		}
		rvs[i], err = resourceVersionOf(obj)
		return err
	}
	// The first fifth with one client, the rest with 32. The first
	// creates of a just-started kapi pay one-time costs (the CRD's
	// validators and converters, the Go heap growing): a warm-up of 500
	// creates, not measured, comes before the single-client figure.
	n1 := n / 5
	warm := n1 / 4
	if err := runLoad(k, warm, 1, 0, create).Err(); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	res := runLoad(k, n1-warm, 1, 0, func(i int) error { return create(warm + i) })
	b.r.load(fmt.Sprintf("create, 1 client (%s objects, after a warm-up of %s)", thousands(n1-warm), thousands(warm)), res, loadTargets{MinPerSec: 1500, MaxCPUPerOpMs: 0.4})
	b.create1 = res.PerSec()
	res = runLoad(k, n-n1, 32, 0, func(i int) error { return create(n1 + i) })
	b.r.load(fmt.Sprintf("create, 32 clients (%s objects)", thousands(n-n1)), res, loadTargets{MinPerSec: 3000, MaxCPUPerOpMs: 0.4})
	b.create32 = res.PerSec()

	time.Sleep(time.Second)
	if rss, err := k.RSSMiB(); b.r.check("RSS after the creates", err) {
		b.r.atMost("RSS after "+objects+" objects", rss.Total, "MiB", 150)
		b.r.add("RSS after "+objects+" objects: of which anonymous (heap, stacks)", rss.Anon, "MiB")
	}
	if size, wal, err := k.DataDirMiB(); b.r.check("data-dir size after the creates", err) {
		b.r.atMost("data-dir size after "+objects+" creates", size, "MiB", 40)
		b.r.add("data-dir size after "+objects+" creates: of which the -wal file", wal, "MiB")
	}
	if obj, err := k.getWidget(ctx, ns, name(1)); b.r.check("GET one object", err) {
		b.storedObject = obj
	}

	// Reads: every reader asks for objects spread over all n.
	res = runLoad(k, 1<<30, 32, 5*time.Second, func(i int) error {
		_, err := k.getWidget(ctx, ns, name(i*7919%n))
		return err
	})
	b.r.load("GET by name, 32 readers (5 s)", res, loadTargets{MinPerSec: 8000})

	b.lists(ctx, k, ns, n)

	// Writes to existing objects, 32 clients on distinct objects.
	res = runLoad(k, n, 32, 0, func(i int) error {
		_, err := k.updateWidget(ctx, ns, name(i), rvs[i], 2, labels(i))
		return err
	})
	b.r.load(fmt.Sprintf("update (PUT with resourceVersion), 32 clients (%s objects)", objects), res, loadTargets{})
	if size, wal, err := k.DataDirMiB(); b.r.check("data-dir size after the updates", err) {
		b.r.atMost("data-dir size after "+objects+" creates and one update of each", size, "MiB", 40)
		b.r.add("data-dir size after "+objects+" creates and one update of each: of which the -wal file", wal, "MiB")
	}
	res = runLoad(k, n, 32, 5*time.Second, func(i int) error {
		_, err := k.mergePatchWidget(ctx, ns, name(i), 3)
		return err
	})
	b.r.load("merge patch, 32 clients (5 s)", res, loadTargets{})
	res = runLoad(k, n, 32, 5*time.Second, func(i int) error {
		_, err := k.applyWidget(ctx, ns, name(i), 4)
		return err
	})
	b.r.load("server-side apply (force), 32 clients (5 s)", res, loadTargets{})

	if err := b.watch(ctx, k); err != nil {
		b.r.fail("watch", err)
	}

	res = runLoad(k, n, 32, 0, func(i int) error { return k.deleteWidget(ctx, ns, name(i)) })
	b.r.load(fmt.Sprintf("delete, 32 clients (%s objects)", objects), res, loadTargets{})
	return nil // Stop, deferred, reports a kapi that exited
}

// lists times LIST requests over the n objects of ns: all in one
// request, in pages of 500, and with a label selector matching 1%. Each
// is the median of 3; the time is until the whole body is read (decoding
// it is the client's cost, not counted).
func (b *bench) lists(ctx context.Context, k *kapiProc, ns string, n int) {
	objects := thousands(n)
	// list runs the requests of one LIST and returns their total time and
	// the number of items.
	list := func(limit int64, selector string) (time.Duration, int, error) {
		var total time.Duration
		items, cont := 0, ""
		for {
			t0 := time.Now()
			body, err := k.listWidgets(ctx, ns, limit, cont, selector)
			total += time.Since(t0)
			if err != nil {
				return 0, 0, err
			}
			var page listPage
			if err := json.Unmarshal(body, &page); err != nil {
				return 0, 0, err
			}
			items += len(page.Items)
			if cont = page.Metadata.Continue; cont == "" {
				return total, items, nil
			}
			if limit == 0 {
				return 0, 0, errors.New("a continue token on a LIST without limit")
			}
		}
	}
	for _, c := range []struct {
		name     string
		limit    int64
		selector string
		want     int
		target   float64
	}{
		{"LIST " + objects + " objects, one request (median of 3)", 0, "", n, 0.2},
		{"LIST " + objects + " objects, pages of 500, all pages (median of 3)", 500, "", n, 0.6},
		{"LIST with a label selector matching 1% (median of 3)", 0, sampleLabel + "=yes", n / 100, 0},
	} {
		var times []time.Duration
		var err error
		for rep := 0; rep < 3 && err == nil; rep++ {
			var d time.Duration
			var items int
			d, items, err = list(c.limit, c.selector)
			if err == nil && items != c.want {
				err = fmt.Errorf("got %d items, want %d", items, c.want)
			}
			times = append(times, d)
		}
		if !b.r.check(c.name, err) {
			continue
		}
		if c.target > 0 {
			b.r.atMost(c.name, median(times)/1000, "s", c.target)
		} else {
			b.r.add(c.name, median(times)/1000, "s")
		}
	}
}

// freshCreates: the 32-client create figure on a fresh kapi in each
// --sync mode.
func (b *bench) freshCreates() error {
	n := b.objects / 2
	var errs []error
	for _, mode := range []string{"full", "normal"} {
		err := func() (err error) {
			k, err := startKapi(b.bin, b.tmp, kapiArgs(mode)...)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, k.Stop()) }()
			ctx, cancel := withTimeout(3 * time.Minute)
			defer cancel()
			if _, err := installCRD(ctx, k, "default"); err != nil {
				return err
			}
			res := runLoad(k, n, 32, 0, func(i int) error {
				_, err := k.createWidget(ctx, "default", fmt.Sprintf("w-%05d", i), nil)
				return err
			})
			targets := loadTargets{}
			if mode == "full" {
				targets.MinPerSec = 2000
			}
			b.r.load(fmt.Sprintf("create, 32 clients, fresh kapi --sync=%s (%s objects)", mode, thousands(n)), res, targets)
			b.fresh32[mode] = res.PerSec()
			return nil
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("--sync=%s: %w", mode, err))
		}
	}
	return errors.Join(errs...)
}

// sustainedUpdates shows that the data dir stays bounded under sustained
// updates: a kapi that compacts every second, keeping 1,000 revisions,
// gets round after round of one merge patch per object; the data dir's
// size is read after each round.
func (b *bench) sustainedUpdates() (err error) {
	k, err := startKapi(b.bin, b.tmp, append(kapiArgs(b.sync), "--compaction-interval=1s", "--history-retention=1s", "--history-revisions=1000")...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Stop()) }()
	ctx, cancel := withTimeout(5 * time.Minute)
	defer cancel()
	const ns, objects, rounds = "default", 2000, 16
	if _, err := installCRD(ctx, k, ns); err != nil {
		return err
	}
	name := func(i int) string { return fmt.Sprintf("s-%05d", i) }
	if err := runLoad(k, objects, 32, 0, func(i int) error {
		_, err := k.createWidget(ctx, ns, name(i), nil)
		return err
	}).Err(); err != nil {
		return fmt.Errorf("creates: %w", err)
	}
	var sizes []float64
	for round := 1; round <= rounds; round++ {
		if err := runLoad(k, objects, 32, 0, func(i int) error {
			_, err := k.mergePatchWidget(ctx, ns, name(i), round)
			return err
		}).Err(); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		time.Sleep(2 * time.Second) // a compaction or two
		size, _, err := k.DataDirMiB()
		if err != nil {
			return err
		}
		sizes = append(sizes, size)
	}
	what := fmt.Sprintf("data dir under sustained updates (%s objects, compaction every 1 s keeping 1,000 revisions)", thousands(objects))
	half := rounds / 2
	b.r.add(what+": after round 1", sizes[0], "MiB")
	b.r.add(fmt.Sprintf("%s: after round %d", what, half), sizes[half-1], "MiB")
	b.r.add(fmt.Sprintf("%s: after round %d", what, rounds), sizes[rounds-1], "MiB")
	// Bounded: once history is at its kept length, later rounds take no
	// more room (SQLite reuses the pages compaction frees), give or take
	// 10 %. The file reaches that plateau in 3 to 6 rounds, depending on
	// how fast the host runs them (24 rounds: 13.3 MiB at round 4, 13.9 from
	// round 6 on), so the halfway round is the 8th.
	b.r.atMost(fmt.Sprintf("%s: round %d as a share of round %d", what, rounds, half), 100*sizes[rounds-1]/sizes[half-1], "%", 110)
	return nil
}
