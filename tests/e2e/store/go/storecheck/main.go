// storecheck: Go's clientv3 (etcd 3.4, from Debian) against a 3-member
// cluster of etcd 3.4 or `kplane store`: a linearizability check under a
// leader kill and etcd's watch guarantees under a member kill. Exits 1 on
// any violation, 0 when every check passed.
//
//	storecheck -selftest
//	storecheck -server /usr/bin/etcd -dir /tmp/x
//	storecheck -server "/path/kplane store" -dir /tmp/x
package main

import (
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"strings"
	"time"
)

func main() {
	self := flag.Bool("selftest", false, "only check the linearizability checker against known histories")
	server := flag.String("server", "/usr/bin/etcd", "the server command (split on spaces); etcd's flags follow")
	dir := flag.String("dir", "", "where members keep data and logs, removed on success (default: a new temporary dir)")
	duration := flag.Duration("lin-duration", 8*time.Second, "length of the linearizability workload")
	clients := flag.Int("clients", 6, "concurrent clients of the linearizability workload")
	keys := flag.Int("keys", 3, "keys of the linearizability workload")
	rounds := flag.Int("watch-rounds", 300, "write rounds of the watch check")
	knownBug := flag.Bool("tolerate-etcd-15220", false, "report, do not fail on, progress notifies out of order with "+
		"events (etcd 3.4.23's RequestProgress, etcd-io/etcd#15220)")
	seed := flag.Int64("seed", time.Now().UnixNano(), "random seed of the workload")
	checks := flag.String("checks", "lin,watch,fragment", "the checks to run, comma-separated: lin, watch, fragment")
	flag.Parse()

	if err := selfTest(); err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
	if *self {
		fmt.Println("PASS: checker self-test")
		return
	}
	fmt.Printf("storecheck: server %q, seed %d\n", *server, *seed)
	root := *dir
	if root == "" {
		d, err := ioutil.TempDir("", "storecheck-")
		if err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
		root = d
	}
	c, err := newCluster(strings.Fields(*server), root, 3)
	if err != nil {
		fmt.Println("FAIL: start:", err)
		os.Exit(1)
	}
	run := map[string]bool{}
	for _, name := range strings.Split(*checks, ",") {
		run[name] = true
	}
	var failures []string
	if run["lin"] {
		t0 := time.Now()
		if err := runLinearizability(c, linConfig{clients: *clients, keys: *keys, duration: *duration,
			opTimeout: 3 * time.Second}, *seed); err != nil {
			failures = append(failures, err.Error())
		}
		fmt.Printf("storecheck: linearizability done in %.1fs\n", time.Since(t0).Seconds())
	}
	if run["watch"] {
		t1 := time.Now()
		if err := runWatch(c, *rounds, *knownBug); err != nil {
			failures = append(failures, err.Error())
		}
		fmt.Printf("storecheck: watch guarantees done in %.1fs\n", time.Since(t1).Seconds())
	}
	if run["fragment"] {
		t2 := time.Now()
		if err := runFragment(c); err != nil {
			failures = append(failures, err.Error())
		}
		fmt.Printf("storecheck: watch fragment done in %.1fs\n", time.Since(t2).Seconds())
	}
	c.stopAll()
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Println("FAIL:", f)
		}
		fmt.Printf("member logs kept in %s\n", root)
		os.Exit(1)
	}
	os.RemoveAll(root)
	fmt.Println("PASS:", *checks, "(lin: linearizable under a leader kill; watch: ordered, unique, atomic, reliable, "+
		"resumable, bookmarkable; fragment: fragmented watch responses joined, whole ones over a client limit refused)")
}
