// A linearizability checker for a history of operations on independent
// registers (one per key), after Wing & Gong's search with Lowe's
// memoization (the algorithm Knossos and porcupine use). Linearizability is
// local (Herlihy & Wing), so every key is checked on its own.
//
// A history is a list of operations, each with the time it was invoked and
// the time it returned. An operation whose outcome the client does not know
// (an error or a timeout on a write) returns at +infinity: it may take effect
// at any point after its invocation, or never. A read that failed tells
// nothing and is left out by the recorder.
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

type opKind int

const (
	opGet opKind = iota
	opPut
	opCas // compare the value with expect, put value if equal
)

// Operation is one client call on one key. Values are never empty: "" is
// the absent key.
type Operation struct {
	Client int
	Key    string
	Kind   opKind
	Value  string // put, cas: the value written; get: the value read
	Expect string // cas: the value compared
	// Known: the client got an answer. For a cas, Swapped is that answer.
	Known   bool
	Swapped bool
	Call    int64 // ns since the start of the run
	Return  int64 // ns; math.MaxInt64 when !Known
}

func (o Operation) String() string {
	ret := "?"
	if o.Known {
		ret = fmt.Sprintf("%.6fs", float64(o.Return)/1e9)
	}
	var what string
	switch o.Kind {
	case opGet:
		what = fmt.Sprintf("get -> %q", o.Value)
	case opPut:
		what = fmt.Sprintf("put %q", o.Value)
	case opCas:
		res := "unknown"
		if o.Known {
			res = fmt.Sprint(o.Swapped)
		}
		what = fmt.Sprintf("cas %q->%q = %s", o.Expect, o.Value, res)
	}
	return fmt.Sprintf("client %d [%.6fs, %s] %s %s", o.Client,
		float64(o.Call)/1e9, ret, o.Key, what)
}

// step applies o to a register holding state; false when o cannot have
// happened in that state.
func step(state string, o Operation) (bool, string) {
	switch o.Kind {
	case opGet:
		return o.Value == state, state
	case opPut:
		return true, o.Value
	case opCas:
		if !o.Known { // took effect or not; either is a legal outcome
			if state == o.Expect {
				return true, o.Value
			}
			return true, state
		}
		if o.Swapped {
			return state == o.Expect, o.Value
		}
		return state != o.Expect, state
	}
	return false, state
}

// entry is a call or a return event in the doubly linked list of events.
type entry struct {
	isCall     bool
	id         int
	time       int64
	match      *entry // call: its return
	prev, next *entry
}

type bitset []uint64

func (b bitset) set(i int)   { b[i/64] |= 1 << uint(i%64) }
func (b bitset) clear(i int) { b[i/64] &^= 1 << uint(i%64) }
func (b bitset) key(state string) string {
	buf := make([]byte, 8*len(b), 8*len(b)+len(state))
	for i, w := range b {
		binary.LittleEndian.PutUint64(buf[8*i:], w)
	}
	return string(append(buf, state...))
}

// maxSearch bounds the memo of the search (each entry holds a bitset of the
// history); beyond it the verdict is "inconclusive", reported as a failure.
// Operations with an unknown outcome widen the search most: each may take
// effect anywhere after its call.
const maxSearch = 2000000

// Verdict of one key's history.
type Verdict struct {
	Key         string
	Ok          bool
	Ops         int
	Linearized  int         // longest prefix the search could linearize
	StuckAt     []Operation // on failure: the operations that could not be placed next
	Explanation string
}

// CheckKey decides whether ops (all on one key, the register initially
// absent) are linearizable.
func CheckKey(key string, ops []Operation) Verdict {
	n := len(ops)
	v := Verdict{Key: key, Ops: n}
	events := make([]*entry, 0, 2*n)
	for i, o := range ops {
		ret := o.Return
		if !o.Known {
			ret = math.MaxInt64
		}
		c := &entry{isCall: true, id: i, time: o.Call}
		r := &entry{isCall: false, id: i, time: ret}
		c.match = r
		events = append(events, c, r)
	}
	// Calls before returns at equal times: such operations count as
	// concurrent, which never rejects a linearizable history.
	sort.SliceStable(events, func(a, b int) bool {
		if events[a].time != events[b].time {
			return events[a].time < events[b].time
		}
		return events[a].isCall && !events[b].isCall
	})
	head := &entry{}
	prev := head
	for _, e := range events {
		prev.next = e
		e.prev = prev
		prev = e
	}
	lift := func(e *entry) {
		e.prev.next = e.next
		if e.next != nil {
			e.next.prev = e.prev
		}
		r := e.match
		r.prev.next = r.next
		if r.next != nil {
			r.next.prev = r.prev
		}
	}
	unlift := func(e *entry) {
		r := e.match
		r.prev.next = r
		if r.next != nil {
			r.next.prev = r
		}
		e.prev.next = e
		if e.next != nil {
			e.next.prev = e
		}
	}
	type frame struct {
		e     *entry
		state string
	}
	var calls []frame
	linearized := make(bitset, (n+63)/64)
	cache := map[string]bool{}
	state := ""
	e := head.next
	best := -1
	for head.next != nil {
		if e.isCall {
			ok, next := step(state, ops[e.id])
			if ok {
				linearized.set(e.id)
				k := linearized.key(next)
				if !cache[k] {
					if len(cache) >= maxSearch {
						v.Explanation = fmt.Sprintf("inconclusive: the search passed %d states", maxSearch)
						v.Linearized = best
						return v
					}
					cache[k] = true
					calls = append(calls, frame{e, state})
					state = next
					lift(e)
					e = head.next
					continue
				}
				linearized.clear(e.id)
			}
			e = e.next
			continue
		}
		// A return of an operation not yet linearized: every operation
		// invoked before it has been tried at this point. Backtrack.
		if len(calls) > best {
			best = len(calls)
			v.StuckAt = v.StuckAt[:0]
			for c := head.next; c != nil && c != e.next; c = c.next {
				if c.isCall {
					v.StuckAt = append(v.StuckAt, ops[c.id])
				}
			}
			v.Explanation = fmt.Sprintf(
				"after %d operations linearized (register %q), none of the "+
					"operations below can come next: %s must have returned",
				len(calls), state, ops[e.id])
		}
		if len(calls) == 0 {
			v.Linearized = best
			return v
		}
		top := calls[len(calls)-1]
		calls = calls[:len(calls)-1]
		state = top.state
		linearized.clear(top.e.id)
		unlift(top.e)
		e = top.e.next
	}
	v.Ok = true
	v.Linearized = n
	v.StuckAt = nil
	v.Explanation = ""
	return v
}

// CheckHistory checks every key of a history; the verdicts in key order.
func CheckHistory(ops []Operation) []Verdict {
	byKey := map[string][]Operation{}
	for _, o := range ops {
		byKey[o.Key] = append(byKey[o.Key], o)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Verdict
	for _, k := range keys {
		out = append(out, CheckKey(k, byKey[k]))
	}
	return out
}
