// The linearizability workload: concurrent clients put, get and
// compare-and-swap a few keys while the leader is killed and restarted;
// every operation is recorded with its invoke and return times and the
// history is checked per key (linearizability.go).
package main

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
)

type linConfig struct {
	clients   int
	keys      int
	duration  time.Duration // the whole run; the leader dies at 1/4, restarts at 1/2
	opTimeout time.Duration
}

type linStats struct {
	ok, unknown, failedReads int
}

func runLinearizability(c *cluster, cfg linConfig, seed int64) error {
	start := time.Now()
	since := func() int64 { return time.Since(start).Nanoseconds() }
	var mu sync.Mutex
	var history []Operation
	var stats linStats
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for ci := 0; ci < cfg.clients; ci++ {
		cli, err := newClient(c.endpoints())
		if err != nil {
			return err
		}
		defer cli.Close()
		wg.Add(1)
		go func(ci int, cli *clientv3.Client) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(ci)))
			seen := map[string]string{} // last value this client knows per key
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("lin/k%d", rng.Intn(cfg.keys))
				o := Operation{Client: ci, Key: key}
				value := fmt.Sprintf("c%d-%d", ci, seq)
				ctx, cancel := context.WithTimeout(context.Background(), cfg.opTimeout)
				var err error
				switch p := rng.Intn(10); {
				case p < 4:
					o.Kind = opGet
					o.Call = since()
					var r *clientv3.GetResponse
					r, err = cli.Get(ctx, key)
					o.Return = since()
					if err == nil {
						if len(r.Kvs) > 0 {
							o.Value = string(r.Kvs[0].Value)
						}
						seen[key] = o.Value
					}
				case p < 7:
					o.Kind = opPut
					o.Value = value
					o.Call = since()
					_, err = cli.Put(ctx, key, value)
					o.Return = since()
					if err == nil {
						seen[key] = value
					}
				default:
					o.Kind = opCas
					o.Value = value
					o.Expect = seen[key]
					cmp := clientv3.Compare(clientv3.Value(key), "=", o.Expect)
					if o.Expect == "" { // a value compare on a missing key fails
						cmp = clientv3.Compare(clientv3.Version(key), "=", 0)
					}
					o.Call = since()
					var r *clientv3.TxnResponse
					r, err = cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, value)).Commit()
					o.Return = since()
					if err == nil {
						o.Swapped = r.Succeeded
						if r.Succeeded {
							seen[key] = value
						} else {
							delete(seen, key) // read it again before the next cas
						}
					}
				}
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					o.Known = true
					history = append(history, o)
					stats.ok++
				case o.Kind == opGet:
					stats.failedReads++ // tells nothing
				default:
					o.Known = false
					o.Return = math.MaxInt64
					history = append(history, o)
					stats.unknown++
				}
				mu.Unlock()
			}
		}(ci, cli)
	}

	time.Sleep(cfg.duration / 4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	leader, err := c.waitLeader(ctx)
	cancel()
	if err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	fmt.Printf("lin: killing leader %s at %.2fs\n", c.members[leader].name, time.Since(start).Seconds())
	c.kill(leader)
	time.Sleep(cfg.duration / 4)
	fmt.Printf("lin: restarting %s at %.2fs\n", c.members[leader].name, time.Since(start).Seconds())
	if err := c.start(leader); err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	time.Sleep(cfg.duration / 2)
	close(stop)
	wg.Wait()
	fmt.Printf("lin: %d operations answered, %d writes with unknown outcome, %d reads failed\n",
		stats.ok, stats.unknown, stats.failedReads)
	if stats.ok < 50 {
		return fmt.Errorf("lin: only %d operations answered; the history proves nothing", stats.ok)
	}

	checkStart := time.Now()
	bad := 0
	for _, v := range CheckHistory(history) {
		if v.Ok {
			fmt.Printf("lin: key %s: %d operations, linearizable\n", v.Key, v.Ops)
			continue
		}
		bad++
		fmt.Printf("lin: key %s: %d operations, NOT linearizable: %s\n", v.Key, v.Ops, v.Explanation)
		for _, o := range v.StuckAt {
			fmt.Printf("lin:   %s\n", o)
		}
	}
	fmt.Printf("lin: checked in %.2fs\n", time.Since(checkStart).Seconds())
	if bad > 0 {
		return fmt.Errorf("lin: %d keys with a non-linearizable history", bad)
	}
	return nil
}
