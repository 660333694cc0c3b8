// A 3-member cluster of real server processes (etcd 3.4 or `kplane store`,
// which takes etcd's flags) on 127.0.0.1 ephemeral ports, each member with
// its own data dir and log file. Members can be killed (SIGKILL) and
// restarted on the same ports and data. Every member dies with this process
// (Pdeathsig), so a crashed check leaves no servers behind.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.uber.org/zap"
)

type member struct {
	name       string
	dataDir    string
	clientURL  string
	peerURL    string
	logPath    string
	cmd        *exec.Cmd
	exited     chan struct{}
	startCount int
}

type cluster struct {
	argv0   []string // the server command before etcd's flags
	dir     string
	members []*member
	initial string
}

// freePort binds port 0 on 127.0.0.1 and releases it (a small race with
// other processes, acceptable in a test).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func newCluster(argv0 []string, dir string, n int) (*cluster, error) {
	c := &cluster{argv0: argv0, dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var initial []string
	for i := 0; i < n; i++ {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		m := &member{
			name:      fmt.Sprintf("n%d", i+1),
			dataDir:   filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", cp),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", pp),
			logPath:   filepath.Join(dir, fmt.Sprintf("n%d.log", i+1)),
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL)
	}
	c.initial = strings.Join(initial, ",")
	for i := range c.members {
		if err := c.start(i); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.waitLeader(ctx); err != nil {
		c.stopAll()
		return nil, err
	}
	return c, nil
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL)
	}
	return eps
}

func (c *cluster) start(i int) error {
	m := c.members[i]
	args := append([]string{}, c.argv0[1:]...)
	args = append(args,
		"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", c.initial, "--initial-cluster-state", "new",
		"--initial-cluster-token", "storecheck")
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "---- start %d: %s %s\n", m.startCount, c.argv0[0], strings.Join(args, " "))
	cmd := exec.Command(c.argv0[0], args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %v", m.name, err)
	}
	m.startCount++
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func(ch chan struct{}) {
		cmd.Wait()
		log.Close()
		close(ch)
	}(m.exited)
	return nil
}

// kill sends SIGKILL to member i and reaps it.
func (c *cluster) kill(i int) {
	m := c.members[i]
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Kill()
	<-m.exited
	m.cmd = nil
}

func (c *cluster) stopAll() {
	for i := range c.members {
		c.kill(i)
	}
}

func quietLog() *zap.Config {
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.FatalLevel)
	return &cfg
}

func newClient(eps []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		LogConfig:   quietLog(),
	})
}

// status asks member i for its status (one attempt, one second).
func (c *cluster) status(i int) (*clientv3.StatusResponse, error) {
	cli, err := newClient([]string{c.members[i].clientURL})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return cli.Status(ctx, c.members[i].clientURL)
}

// waitLeader waits until a running member reports itself the leader and
// answers a linearizable read; its index.
func (c *cluster) waitLeader(ctx context.Context) (int, error) {
	for {
		for i, m := range c.members {
			if m.cmd == nil {
				continue
			}
			st, err := c.status(i)
			if err != nil || st.Header == nil || st.Leader != st.Header.MemberId {
				continue
			}
			cli, err := newClient([]string{m.clientURL})
			if err != nil {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = cli.Get(rctx, "storecheck-ready")
			cancel()
			cli.Close()
			if err == nil {
				return i, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no leader: %v (logs in %s)", ctx.Err(), c.dir)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady waits until member i answers a linearizable read itself.
func (c *cluster) waitReady(ctx context.Context, i int) error {
	cli, err := newClient([]string{c.members[i].clientURL})
	if err != nil {
		return err
	}
	defer cli.Close()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cli.Get(rctx, "storecheck-ready")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v (log %s)", c.members[i].name, err, c.members[i].logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
