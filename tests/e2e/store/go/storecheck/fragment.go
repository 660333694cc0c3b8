// Watch response fragmenting, as etcd's clientv3 integration tests
// TestWatchFragment{Enable,Disable}[WithGRPCLimit] check it: ten 1 MiB puts
// read back by a watcher from history come as one ~10 MiB response, over
// the server's limit (--max-request-bytes, 1.5 MiB by default, plus 512 KiB)
// and over a client's 1.5 MiB gRPC receive limit. With WithFragment() the
// server cuts it into pieces under its limit and clientv3 joins them into
// one WatchResponse of ten events; without it, the response comes whole:
// a client with the default receive limit gets it, the limited client gets
// ResourceExhausted.
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
)

const (
	fragmentPrefix = "frag/"
	fragmentPuts   = 10
	fragmentValue  = 1 << 20
	// clientv3 integration's ClientMaxCallRecvMsgSize.
	fragmentRecvLimit = 1536 * 1024
)

func fragmentValueOf(i int) string {
	return strings.Repeat(string(rune('a'+i)), fragmentValue)
}

// firstWatchResponse watches fragmentPrefix from `rev` and returns the
// first response (or an error after 30 s).
func firstWatchResponse(cli *clientv3.Client, rev int64, opts ...clientv3.OpOption) (clientv3.WatchResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append(opts, clientv3.WithPrefix(), clientv3.WithRev(rev))
	select {
	case r, ok := <-cli.Watch(ctx, fragmentPrefix, opts...):
		if !ok {
			return r, fmt.Errorf("watch channel closed without a response")
		}
		return r, nil
	case <-ctx.Done():
		return clientv3.WatchResponse{}, fmt.Errorf("no watch response in 30 s")
	}
}

// checkTen: one response with the ten puts, in order, values intact.
func checkTen(r clientv3.WatchResponse, first int64) error {
	if err := r.Err(); err != nil {
		return fmt.Errorf("unexpected error %v", err)
	}
	if len(r.Events) != fragmentPuts {
		return fmt.Errorf("expected %d events in one response, got %d", fragmentPuts, len(r.Events))
	}
	for i, e := range r.Events {
		if e.Kv.ModRevision != first+int64(i) || string(e.Kv.Key) != fmt.Sprintf("%s%d", fragmentPrefix, i) ||
			string(e.Kv.Value) != fragmentValueOf(i) {
			return fmt.Errorf("event %d: got %s@%d (%d bytes)", i, e.Kv.Key, e.Kv.ModRevision, len(e.Kv.Value))
		}
	}
	return nil
}

func runFragment(c *cluster) error {
	// Both clients on one member: a linearizable read there (below) makes
	// sure that member has applied every put before a watch reads its
	// history (a follower may still be applying the last put when the
	// leader acknowledged it, and would answer with nine events first).
	ep := []string{c.members[0].clientURL}
	cli, err := newClient(ep)
	if err != nil {
		return fmt.Errorf("fragment: %v", err)
	}
	defer cli.Close()
	limited, err := clientv3.New(clientv3.Config{
		Endpoints:          ep,
		DialTimeout:        5 * time.Second,
		LogConfig:          quietLog(),
		MaxCallRecvMsgSize: fragmentRecvLimit,
	})
	if err != nil {
		return fmt.Errorf("fragment: %v", err)
	}
	defer limited.Close()

	var first int64
	for i := 0; i < fragmentPuts; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cli.Put(ctx, fmt.Sprintf("%s%d", fragmentPrefix, i), fragmentValueOf(i))
		cancel()
		if err != nil {
			return fmt.Errorf("fragment: put %d: %v", i, err)
		}
		if i == 0 {
			first = r.Header.Revision
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	g, err := cli.Get(ctx, fragmentPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return fmt.Errorf("fragment: get: %v", err)
	}
	if g.Count != fragmentPuts {
		return fmt.Errorf("fragment: %d keys under %s, want %d", g.Count, fragmentPrefix, fragmentPuts)
	}

	var failures []string
	// TestWatchFragmentEnableWithGRPCLimit: pieces under the client's limit,
	// joined by clientv3.
	if r, err := firstWatchResponse(limited, first, clientv3.WithFragment()); err != nil {
		failures = append(failures, "fragment, 1.5 MiB client: "+err.Error())
	} else if err := checkTen(r, first); err != nil {
		failures = append(failures, "fragment, 1.5 MiB client: "+err.Error())
	}
	// TestWatchFragmentEnable and TestWatchFragmentDisable: a client with
	// the default receive limit gets the same, pieces or whole.
	for _, opts := range [][]clientv3.OpOption{{clientv3.WithFragment()}, nil} {
		name := "no fragment"
		if opts != nil {
			name = "fragment"
		}
		if r, err := firstWatchResponse(cli, first, opts...); err != nil {
			failures = append(failures, name+", default client: "+err.Error())
		} else if err := checkTen(r, first); err != nil {
			failures = append(failures, name+", default client: "+err.Error())
		}
	}
	// TestWatchFragmentDisableWithGRPCLimit: sent whole, over the client's
	// limit.
	if r, err := firstWatchResponse(limited, first); err != nil {
		failures = append(failures, "no fragment, 1.5 MiB client: "+err.Error())
	} else if len(r.Events) != 0 || r.Err() == nil ||
		!strings.Contains(r.Err().Error(), "code = ResourceExhausted desc = grpc: received message larger than max (") {
		failures = append(failures, fmt.Sprintf("no fragment, 1.5 MiB client: expected ResourceExhausted, got %d events, error %v",
			len(r.Events), r.Err()))
	}
	if len(failures) > 0 {
		return fmt.Errorf("watch fragment: %s", strings.Join(failures, "; "))
	}
	return nil
}
