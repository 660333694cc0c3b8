// Self-test of the linearizability checker: histories with a known answer,
// so that a checker that accepts everything fails here.
package main

import (
	"fmt"
	"math"
	"math/rand"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/etcdserver/etcdserverpb"
	"go.etcd.io/etcd/mvcc/mvccpb"
)

type selfCase struct {
	name string
	want bool
	ops  []Operation
}

const inf = math.MaxInt64

func get(c int, v string, call, ret int64) Operation {
	return Operation{Client: c, Key: "k", Kind: opGet, Value: v, Known: true, Call: call, Return: ret}
}

func put(c int, v string, call, ret int64) Operation {
	known := ret != inf
	return Operation{Client: c, Key: "k", Kind: opPut, Value: v, Known: known, Call: call, Return: ret}
}

func cas(c int, exp, v string, swapped bool, call, ret int64) Operation {
	known := ret != inf
	return Operation{Client: c, Key: "k", Kind: opCas, Expect: exp, Value: v, Known: known,
		Swapped: swapped, Call: call, Return: ret}
}

var selfCases = []selfCase{
	{"sequential put then get", true, []Operation{put(0, "a", 0, 10), get(1, "a", 20, 30)}},
	{"stale read after a completed put", false, []Operation{put(0, "a", 0, 10), get(1, "", 20, 30)}},
	{"read concurrent with a put sees either", true, []Operation{
		put(0, "a", 0, 10), put(0, "b", 20, 40), get(1, "a", 25, 30), get(2, "b", 26, 35)}},
	{"reads go back in time", false, []Operation{
		put(0, "a", 0, 10), put(0, "b", 20, 40), get(1, "b", 21, 25), get(2, "a", 26, 30)}},
	{"value never written", false, []Operation{put(0, "a", 0, 10), get(1, "z", 20, 30)}},
	{"cas swaps from the current value", true, []Operation{
		put(0, "a", 0, 10), cas(1, "a", "b", true, 20, 30), get(2, "b", 40, 50)}},
	{"cas swapped although the value differed", false, []Operation{
		put(0, "a", 0, 10), cas(1, "x", "b", true, 20, 30)}},
	{"cas failed although the value matched", false, []Operation{
		put(0, "a", 0, 10), cas(1, "a", "b", false, 20, 30)}},
	{"two cas from the same value both swap", false, []Operation{
		put(0, "a", 0, 10), cas(1, "a", "b", true, 20, 40), cas(2, "a", "c", true, 21, 41)}},
	{"unknown put observed later", true, []Operation{
		put(0, "a", 0, inf), get(1, "a", 50, 60), get(1, "a", 70, 80)}},
	{"unknown put never took effect", true, []Operation{
		put(0, "a", 0, inf), get(1, "", 50, 60)}},
	{"unknown put took effect, then undone", false, []Operation{
		put(0, "a", 0, inf), get(1, "a", 50, 60), get(1, "", 70, 80)}},
	{"unknown cas either way", true, []Operation{
		put(0, "a", 0, 10), cas(1, "a", "b", false, 20, inf), get(2, "a", 30, 40), get(2, "b", 50, 60)}},
	{"a write lost after it returned", false, []Operation{
		put(0, "a", 0, 10), put(1, "b", 20, 30), get(2, "b", 40, 50), get(2, "a", 60, 70)}},
}

// selfTest runs every case; an error names the ones with the wrong answer.
func selfTest() error {
	bad := 0
	for _, c := range selfCases {
		v := CheckKey("k", c.ops)
		status := "ok"
		if v.Ok != c.want {
			status = "WRONG"
			bad++
		}
		fmt.Printf("selftest %-45s linearizable=%-5v want=%-5v %s\n", c.name, v.Ok, c.want, status)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d checker self-test cases answered wrong", bad, len(selfCases))
	}
	if err := randomSelfTest(); err != nil {
		return err
	}
	return watchSelfTest()
}

// Watch-check self-test: synthetic streams with a known answer fed through
// the same checks as the real watchers (watchLog.take, checkReliable).
func wresp(rev int64, evs ...event) clientv3.WatchResponse {
	r := clientv3.WatchResponse{Header: etcdserverpb.ResponseHeader{Revision: rev}}
	for _, e := range evs {
		t := mvccpb.DELETE
		if e.put {
			t = mvccpb.PUT
		}
		r.Events = append(r.Events, &clientv3.Event{Type: t,
			Kv: &mvccpb.KeyValue{Key: []byte(e.key), Value: []byte(e.value), ModRevision: e.rev}})
	}
	return r
}

func pev(rev int64, key, value string) event {
	return event{rev: rev, key: key, put: true, value: value}
}

func watchSelfTest() error {
	w2 := write{rev: 2, events: []event{pev(2, "a", "x"), pev(2, "b", "x")}}
	w3 := write{rev: 3, events: []event{pev(3, "c", "y")}}
	w4 := write{rev: 4, events: []event{{rev: 4, key: "a"}}}
	writes := []write{w2, w3, w4}
	cases := []struct {
		name  string
		ok    bool
		resps []clientv3.WatchResponse
	}{
		{"every event once, in order", true, []clientv3.WatchResponse{
			wresp(2, w2.events...), wresp(3, w3.events...), wresp(3), wresp(4, w4.events...), wresp(4)}},
		{"out of order", false, []clientv3.WatchResponse{
			wresp(3, w3.events...), wresp(3, w2.events...), wresp(4, w4.events...)}},
		{"an event twice", false, []clientv3.WatchResponse{
			wresp(2, w2.events...), wresp(3, w3.events...), wresp(3, w3.events...), wresp(4, w4.events...)}},
		{"an event twice in one response", false, []clientv3.WatchResponse{
			wresp(2, w2.events...), wresp(3, w3.events[0], w3.events[0]), wresp(4, w4.events...)}},
		{"one txn split over two responses", false, []clientv3.WatchResponse{
			wresp(2, w2.events[0]), wresp(2, w2.events[1]), wresp(3, w3.events...), wresp(4, w4.events...)}},
		{"a revision skipped", false, []clientv3.WatchResponse{
			wresp(2, w2.events...), wresp(4, w4.events...)}},
		{"a revision with other events", false, []clientv3.WatchResponse{
			wresp(2, w2.events[0]), wresp(3, w3.events...), wresp(4, w4.events...)}},
		{"progress notify ahead of an event", false, []clientv3.WatchResponse{
			wresp(2, w2.events...), wresp(3), wresp(3, w3.events...), wresp(4, w4.events...)}},
		{"progress notify behind an event", false, []clientv3.WatchResponse{
			wresp(2, w2.events...), wresp(3, w3.events...), wresp(2), wresp(4, w4.events...)}},
	}
	bad := 0
	for _, c := range cases {
		l := newWatchLog("self")
		for _, r := range c.resps {
			l.take(r)
		}
		problems := append(append(l.violations, l.lateEvents...), checkReliable(l, writes, 2, 4)...)
		ok := len(problems) == 0
		status := "ok"
		if ok != c.ok {
			status = "WRONG"
			bad++
		}
		fmt.Printf("selftest watch %-39s clean=%-5v want=%-5v %s\n", c.name, ok, c.ok, status)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d watch-check self-test cases answered wrong", bad, len(cases))
	}
	return nil
}

// randomHistory: n operations on one register, each taking effect at time
// 10*i inside its [call, return] interval (so the history is linearizable),
// with intervals up to 60 wide so that many overlap.
func randomHistory(rng *rand.Rand, n int) []Operation {
	var ops []Operation
	state := ""
	for i := 0; i < n; i++ {
		at := int64(10 * (i + 1))
		o := Operation{Client: i % 8, Key: "k", Known: true,
			Call: at - rng.Int63n(30), Return: at + rng.Int63n(30)}
		switch p := rng.Intn(10); {
		case p < 4:
			o.Kind, o.Value = opGet, state
		case p < 7:
			o.Kind, o.Value = opPut, fmt.Sprintf("v%d", i)
			state = o.Value
		default:
			o.Kind, o.Value, o.Expect = opCas, fmt.Sprintf("v%d", i), state
			if rng.Intn(2) == 0 {
				o.Expect = fmt.Sprintf("v%d", rng.Intn(i+1))
			}
			o.Swapped = o.Expect == state
			if o.Swapped {
				state = o.Value
			}
		}
		if o.Kind != opGet && rng.Intn(100) == 0 {
			o.Known, o.Return = false, math.MaxInt64
		}
		ops = append(ops, o)
	}
	return ops
}

// makeStale turns one read into a stale read: it returns the value of a
// write P although another write Q started after P returned and returned
// before the read began. False when the history has no such read.
func makeStale(ops []Operation) bool {
	writes := func(o Operation) bool {
		return o.Known && (o.Kind == opPut || (o.Kind == opCas && o.Swapped))
	}
	for g := len(ops) - 1; g >= 0; g-- {
		if ops[g].Kind != opGet {
			continue
		}
		for q := range ops {
			if !writes(ops[q]) || ops[q].Return >= ops[g].Call || ops[q].Value == ops[g].Value {
				continue
			}
			for p := range ops {
				if writes(ops[p]) && ops[p].Return < ops[q].Call {
					ops[g].Value = ops[p].Value
					return true
				}
			}
		}
	}
	return false
}

func randomSelfTest() error {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		ops := randomHistory(rng, 1000)
		if v := CheckKey("k", ops); !v.Ok {
			return fmt.Errorf("random linearizable history %d rejected: %s", i, v.Explanation)
		}
		if !makeStale(ops) {
			return fmt.Errorf("random history %d: no read to make stale", i)
		}
		if v := CheckKey("k", ops); v.Ok {
			return fmt.Errorf("random history %d with a stale read accepted", i)
		}
	}
	fmt.Println("selftest 20 random linearizable histories of 1000 operations accepted; each with one stale read rejected")
	return nil
}
