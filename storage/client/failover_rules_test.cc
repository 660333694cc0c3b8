// Pins failover.h's rules, which both store clients (RemoteKV, GrpcKV)
// follow: the transport tests (remote_kv_fake_test, grpc_kv_test,
// failover_test) show the clients keep to them.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "storage/client/failover.h"

namespace kplane::storage {
namespace {

Attempt Transport(Status s, bool unsent = false) {
  return {std::move(s), /*transport=*/true, unsent};
}
Attempt Answer(Status s) { return {std::move(s)}; }

TEST(ClassifyFailure, ReadsMoveOnAfterAnyTransportFailure) {
  EXPECT_EQ(ClassifyFailure(CallKind::kRead,
                            Transport(UnavailableError("connection reset"))),
            FailureAction::kTryNext);
  EXPECT_EQ(
      ClassifyFailure(CallKind::kRead,
                      Transport(DeadlineExceededError("reading: timed out"))),
      FailureAction::kTryNext);
}

TEST(ClassifyFailure, WritesMoveOnOnlyWhenTheRequestNeverLeft) {
  EXPECT_EQ(ClassifyFailure(CallKind::kWrite,
                            Transport(UnavailableError("connect: refused"),
                                      /*unsent=*/true)),
            FailureAction::kTryNext);
  EXPECT_EQ(ClassifyFailure(CallKind::kWrite,
                            Transport(UnavailableError("connection reset"))),
            FailureAction::kMayHaveApplied);
  EXPECT_EQ(
      ClassifyFailure(CallKind::kWrite,
                      Transport(DeadlineExceededError("reading: timed out"))),
      FailureAction::kMayHaveApplied);
}

TEST(ClassifyFailure, ReadsMoveOnAfterNoLeaderAnswers) {
  for (const Status& s :
       {Status(StatusCode::kUnavailable, "etcdserver: no leader"),
        Status(StatusCode::kNotLeader, "etcdserver: leader changed"),
        Status(StatusCode::kDeadlineExceeded,
               "etcdserver: request timed out")}) {
    EXPECT_EQ(ClassifyFailure(CallKind::kRead, Answer(s)),
              FailureAction::kTryNext)
        << s;
  }
  for (const Status& s :
       {Status(StatusCode::kCompacted,
               "etcdserver: mvcc: required revision "
               "has been compacted"),
        Status(StatusCode::kNotFound, "etcdserver: requested lease not found"),
        Status(StatusCode::kInternal, "boom")}) {
    EXPECT_EQ(ClassifyFailure(CallKind::kRead, Answer(s)),
              FailureAction::kAnswer)
        << s;
  }
}

TEST(ClassifyFailure, WritesMoveOnOnlyWhenRefusedBeforeTheRaftLog) {
  for (const Status& s :
       {Status(StatusCode::kUnavailable, "etcdserver: no leader"),
        Status(StatusCode::kNotLeader, "etcdserver: not leader"),
        Status(StatusCode::kUnavailable,
               "etcdserver: raft proposal dropped")}) {
    EXPECT_TRUE(IsRefusedBeforeProposal(s)) << s;
    EXPECT_EQ(ClassifyFailure(CallKind::kWrite, Answer(s)),
              FailureAction::kTryNext)
        << s;
  }
  // Logged, then lost or late: it may have been applied.
  for (const Status& s :
       {Status(StatusCode::kNotLeader, "etcdserver: leader changed"),
        Status(StatusCode::kDeadlineExceeded, "etcdserver: request timed out"),
        Status(StatusCode::kNoSpace,
               "etcdserver: mvcc: database space "
               "exceeded")}) {
    EXPECT_FALSE(IsRefusedBeforeProposal(s)) << s;
    EXPECT_EQ(ClassifyFailure(CallKind::kWrite, Answer(s)),
              FailureAction::kAnswer)
        << s;
  }
}

// etcd 3.4's learner refuses every client call but Status and a
// serializable Range in its gRPC interceptor, before the request reaches
// raft (clientv3 retries it elsewhere): a write, too, moves on. Another
// kUnavailable answer of a write does not say so.
TEST(ClassifyFailure, WritesMoveOnFromALearnersRefusal) {
  const Status learner(StatusCode::kUnavailable,
                       "etcdserver: rpc not supported for learner");
  EXPECT_TRUE(IsRefusedBeforeProposal(learner));
  EXPECT_EQ(ClassifyFailure(CallKind::kWrite, Answer(learner)),
            FailureAction::kTryNext);
  EXPECT_EQ(ClassifyFailure(CallKind::kRead, Answer(learner)),
            FailureAction::kTryNext);
  for (const Status& s :
       {Status(StatusCode::kUnavailable, "etcdserver: server stopped"),
        Status(StatusCode::kUnavailable,
               "etcdserver: request timed out, possibly due to connection "
               "lost")}) {
    EXPECT_FALSE(IsRefusedBeforeProposal(s)) << s;
    EXPECT_EQ(ClassifyFailure(CallKind::kWrite, Answer(s)),
              FailureAction::kAnswer)
        << s;
  }
}

// WithFailover with scripted attempts. Each attempt moves the fake clock by
// `step`, so a call whose deadline passes ends without sleeping.
class WithFailoverTest : public ::testing::Test {
 protected:
  WithFailoverTest() {
    auto eps = ParseEndpoints({"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"});
    endpoints_ = *eps;
    timing_ = {&clock_, seconds(10), milliseconds(50), seconds(1)};
  }

  // Runs a call whose attempt on endpoint i returns script[i].
  Status Run(CallKind kind, const std::vector<Attempt>& script,
             Duration step = milliseconds(1)) {
    return WithFailover(timing_, endpoints_, &preferred_, "Put", kind,
                        [&](size_t ep, TimePoint) {
                          tried_.push_back(ep);
                          clock_.Advance(step);
                          return script[ep];
                        });
  }

  FakeClock clock_;
  std::vector<Endpoint> endpoints_;
  FailoverTiming timing_;
  std::atomic<size_t> preferred_{0};
  std::vector<size_t> tried_;
};

TEST_F(WithFailoverTest, StartsAtThePreferredEndpointAndRemembersTheAnswer) {
  preferred_ = 1;
  Status s =
      Run(CallKind::kWrite,
          {Attempt{}, Transport(UnavailableError("refused"), true), Attempt{}});
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(tried_, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(preferred_.load(), 2u);
}

TEST_F(WithFailoverTest, AWriteThatMayHaveLandedIsNotResent) {
  Status s = Run(
      CallKind::kWrite,
      {Transport(UnavailableError("connection reset")), Attempt{}, Attempt{}});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "Put to 127.0.0.1:1 failed: connection reset (the write may have "
            "been applied)");
  EXPECT_EQ(tried_, (std::vector<size_t>{0}));
}

TEST_F(WithFailoverTest, AServerAnswerIsTheResult) {
  Status s =
      Run(CallKind::kRead,
          {Answer(Status(StatusCode::kNotLeader,
                         "etcdserver: leader "
                         "changed")),
           Answer(Status(StatusCode::kCompacted, "compacted")), Attempt{}});
  EXPECT_EQ(s.code(), StatusCode::kCompacted);
  EXPECT_EQ(tried_, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(preferred_.load(), 1u);
}

// Endpoints {learner, voter, voter}: the learner's refusal sends the write
// on to the next member, which applies it; another kUnavailable answer is
// the write's result.
TEST_F(WithFailoverTest, AWriteMovesOnFromALearner) {
  const Attempt learner = Answer(Status(
      StatusCode::kUnavailable, "etcdserver: rpc not supported for learner"));
  Status s = Run(CallKind::kWrite, {learner, Attempt{}, Attempt{}});
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(tried_, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(preferred_.load(), 1u);

  tried_.clear();
  preferred_ = 0;
  const Attempt stopped =
      Answer(Status(StatusCode::kUnavailable, "etcdserver: server stopped"));
  s = Run(CallKind::kWrite, {stopped, Attempt{}, Attempt{}});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "etcdserver: server stopped");
  EXPECT_EQ(tried_, (std::vector<size_t>{0}));
}

TEST_F(WithFailoverTest, NoEndpointAnsweredBeforeTheDeadline) {
  const Attempt down = Transport(UnavailableError("connect: refused"), true);
  Status s = Run(CallKind::kRead, {down, down, down}, seconds(4));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "Put: no endpoint answered (last: connect: refused)");
  // 4 s per attempt, 10 s for the call: the third attempt starts at 8 s.
  EXPECT_EQ(tried_, (std::vector<size_t>{0, 1, 2}));
  // The last server answer is returned as it is.
  tried_.clear();
  const Attempt no_leader =
      Answer(Status(StatusCode::kUnavailable, "etcdserver: no leader"));
  s = Run(CallKind::kRead, {no_leader, no_leader, no_leader}, seconds(4));
  EXPECT_EQ(s.message(), "etcdserver: no leader");
}

etcdserverpb::WatchResponse Created(int64_t header_rev) {
  etcdserverpb::WatchResponse r;
  r.set_created(true);
  r.mutable_header()->set_revision(header_rev);
  return r;
}

etcdserverpb::WatchResponse Events(std::vector<int64_t> revs) {
  etcdserverpb::WatchResponse r;
  for (int64_t rev : revs) {
    r.add_events()->mutable_kv()->set_mod_revision(rev);
    r.mutable_header()->set_revision(rev);
  }
  return r;
}

std::vector<int64_t> Revs(const etcdserverpb::WatchResponse& r) {
  std::vector<int64_t> out;
  for (const auto& e : r.events()) out.push_back(e.kv().mod_revision());
  return out;
}

etcdserverpb::WatchCreateRequest From(int64_t start) {
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  req.set_prev_kv(true);
  req.set_start_revision(start);
  return req;
}

TEST(WatchResumer, ResumesFromTheRevisionAfterTheLastDelivered) {
  WatchResumer w(From(0));
  EXPECT_EQ(w.NextCreateRequest().start_revision(), 0);
  auto created = Created(7);
  WatchResumer::Step step = w.OnResponse(&created);
  EXPECT_TRUE(step.resume.ok());
  EXPECT_TRUE(step.deliver && step.first_created && step.stream_created &&
              step.progressed);
  EXPECT_TRUE(w.created());
  EXPECT_EQ(w.next_rev(), 8);

  auto events = Events({8, 9});
  step = w.OnResponse(&events);
  EXPECT_TRUE(step.deliver && step.progressed && !step.first_created);
  EXPECT_EQ(w.next_rev(), 10);

  // A progress notification is delivered and does not move the resume point.
  etcdserverpb::WatchResponse progress;
  progress.mutable_header()->set_revision(20);
  step = w.OnResponse(&progress);
  EXPECT_TRUE(step.deliver && step.progressed);
  EXPECT_EQ(w.next_rev(), 10);

  // The next stream: the same filters, from next_rev.
  etcdserverpb::WatchCreateRequest again = w.NextCreateRequest();
  EXPECT_EQ(again.key(), "a");
  EXPECT_TRUE(again.prev_kv());
  EXPECT_EQ(again.start_revision(), 10);

  // Its `created` is swallowed.
  auto recreated = Created(9);
  step = w.OnResponse(&recreated);
  EXPECT_FALSE(step.deliver);
  EXPECT_FALSE(step.first_created);
  EXPECT_TRUE(step.stream_created && step.progressed);
}

TEST(WatchResumer, DropsEventsBelowTheResumePoint) {
  WatchResumer w(From(5));
  auto created = Created(3);
  w.OnResponse(&created);
  EXPECT_EQ(w.next_rev(), 5);  // start_revision, not the header's

  auto old = Events({3, 4});
  WatchResumer::Step step = w.OnResponse(&old);
  EXPECT_FALSE(step.deliver);
  EXPECT_TRUE(step.progressed);
  EXPECT_EQ(w.next_rev(), 5);

  auto mixed = Events({4, 5, 6});
  step = w.OnResponse(&mixed);
  EXPECT_TRUE(step.deliver);
  EXPECT_EQ(Revs(mixed), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(w.next_rev(), 7);
}

// etcd's fragment: one revision's events over several responses, all but
// the last marked fragment=true. Every piece is delivered, and a stream
// re-created in the middle resumes from that revision without handing its
// delivered events over twice.
TEST(WatchResumer, FragmentsOfOneRevisionAreAllDelivered) {
  WatchResumer w(From(0));
  auto created = Created(7);
  w.OnResponse(&created);
  auto first = Events({8, 8});
  first.set_fragment(true);
  WatchResumer::Step step = w.OnResponse(&first);
  EXPECT_TRUE(step.deliver);
  EXPECT_EQ(w.next_rev(), 8);  // 8 is not complete yet
  auto second = Events({8, 8});
  second.set_fragment(true);
  step = w.OnResponse(&second);
  EXPECT_TRUE(step.deliver);
  EXPECT_EQ(Revs(second), (std::vector<int64_t>{8, 8}));
  auto last = Events({8});
  step = w.OnResponse(&last);
  EXPECT_TRUE(step.deliver);
  EXPECT_EQ(Revs(last), (std::vector<int64_t>{8}));
  EXPECT_EQ(w.next_rev(), 9);
}

TEST(WatchResumer, AResumeInsideAFragmentedRevisionSkipsWhatWasDelivered) {
  WatchResumer w(From(0));
  auto created = Created(7);
  w.OnResponse(&created);
  auto first = Events({8, 8});
  first.set_fragment(true);
  ASSERT_TRUE(w.OnResponse(&first).deliver);
  // The stream broke: the next starts at 8 and sends 8's events again,
  // fragmented its own way.
  EXPECT_EQ(w.NextCreateRequest().start_revision(), 8);
  auto recreated = Created(9);
  EXPECT_FALSE(w.OnResponse(&recreated).deliver);
  auto again = Events({8});
  again.set_fragment(true);
  EXPECT_FALSE(w.OnResponse(&again).deliver);  // delivered before
  auto rest = Events({8, 8, 8});
  rest.set_fragment(true);
  WatchResumer::Step step = w.OnResponse(&rest);
  EXPECT_TRUE(step.deliver);
  EXPECT_EQ(Revs(rest), (std::vector<int64_t>{8, 8}));  // the 3rd and 4th
  auto end = Events({8, 9});
  step = w.OnResponse(&end);
  EXPECT_TRUE(step.deliver);
  EXPECT_EQ(Revs(end), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(w.next_rev(), 10);
}

TEST(WatchResumer, ACompactedResumePointEndsTheWatch) {
  WatchResumer w(From(0));
  auto created = Created(7);
  w.OnResponse(&created);
  etcdserverpb::WatchResponse canceled;
  canceled.set_canceled(true);
  canceled.set_compact_revision(12);
  WatchResumer::Step step = w.OnResponse(&canceled);
  EXPECT_TRUE(step.resume.ok());
  EXPECT_TRUE(step.deliver);
  EXPECT_FALSE(step.progressed);
  EXPECT_TRUE(w.finished());

  // The same when re-creating the watch on another member.
  WatchResumer r(From(0));
  r.OnResponse(&created);
  auto recreated = Created(30);
  recreated.set_canceled(true);
  recreated.set_compact_revision(12);
  step = r.OnResponse(&recreated);
  EXPECT_TRUE(step.resume.ok());
  EXPECT_TRUE(step.deliver && step.stream_created);
  EXPECT_FALSE(step.progressed);
  EXPECT_TRUE(r.finished());
}

TEST(WatchResumer, AnyOtherCancelResumesElsewhere) {
  WatchResumer w(From(0));
  auto created = Created(7);
  w.OnResponse(&created);
  etcdserverpb::WatchResponse canceled;
  canceled.set_canceled(true);
  canceled.set_cancel_reason("etcdserver: no leader");
  WatchResumer::Step step = w.OnResponse(&canceled);
  EXPECT_EQ(step.resume.code(), StatusCode::kUnavailable);
  EXPECT_EQ(step.resume.message(),
            "watch canceled by the server: etcdserver: no leader");
  EXPECT_FALSE(step.deliver);
  EXPECT_FALSE(w.finished());

  auto recreated = Created(9);
  recreated.set_canceled(true);
  recreated.set_cancel_reason("etcdserver: no leader");
  step = w.OnResponse(&recreated);
  EXPECT_EQ(step.resume.code(), StatusCode::kUnavailable);
  EXPECT_EQ(step.resume.message(),
            "watch re-creation canceled: etcdserver: no leader");
  EXPECT_FALSE(step.deliver);
  EXPECT_FALSE(w.finished());
}

TEST(WatchResumer, ARefusedCreationIsDeliveredAndFinal) {
  WatchResumer w(From(0));
  auto created = Created(7);
  created.set_canceled(true);
  created.set_cancel_reason("bad range");
  WatchResumer::Step step = w.OnResponse(&created);
  EXPECT_TRUE(step.resume.ok());
  EXPECT_TRUE(step.deliver && step.first_created);
  EXPECT_TRUE(w.finished());
}

TEST(WatchResumer, ARecreationRefusedForTheCallersIdentityIsPermissionDenied) {
  WatchResumer w(From(0));
  auto created = Created(7);
  w.OnResponse(&created);
  for (const std::string reason :
       {"rpc error: code = Unauthenticated desc = etcdserver: invalid auth "
        "token",
        "rpc error: code = PermissionDenied desc = etcdserver: permission "
        "denied",
        "rpc error: code = InvalidArgument desc = etcdserver: user name is "
        "empty"}) {
    auto recreated = Created(9);
    recreated.set_canceled(true);
    recreated.set_cancel_reason(reason);
    WatchResumer::Step step = w.OnResponse(&recreated);
    EXPECT_EQ(step.resume.code(), StatusCode::kPermissionDenied) << reason;
    EXPECT_EQ(step.resume.message(), reason);
    EXPECT_FALSE(step.deliver);
    EXPECT_FALSE(w.finished());
  }
}

// WatchState::RunStreams with scripted streams on three endpoints: each
// stream's outcome comes from `script` in turn (after the watch's first
// `created`, delivered by the first stream).
class RunStreamsTest : public ::testing::Test {
 protected:
  RunStreamsTest() : state_(From(0)) {
    endpoints_ = *ParseEndpoints({"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"});
    // The real clock: after each round without progress the loop waits
    // the 1 ms backoff.
    timing_ = {Clock::Real(), seconds(10), milliseconds(1), milliseconds(1)};
    state_.callback = [this](const etcdserverpb::WatchResponse& r) {
      delivered_.push_back(r);
    };
  }

  // Runs the loop until the script ends (the watch is then stopped).
  void Run(std::vector<Status> script) {
    size_t next = 0;
    state_.RunStreams(
        timing_, endpoints_, 0, [](const Status&) { return true; },
        [&](size_t ep, bool* progressed) -> Status {
          tried_.push_back(ep);
          if (!state_.resumer.created()) {
            auto created = Created(7);
            EXPECT_TRUE(state_.HandleResponse(created, progressed, [] {}).ok());
          }
          if (next == script.size()) {
            MutexLock l(&state_.mu);
            state_.stop = true;
            return CancelledError("script over");
          }
          Status s = script[next++];
          // A stream that delivered an event moved the watch on.
          if (s.ok()) {
            auto events = Events({int64_t(10 + next)});
            EXPECT_TRUE(state_.HandleResponse(events, progressed, [] {}).ok());
            return UnavailableError("broke after an event");
          }
          return s;
        });
  }

  std::vector<Endpoint> endpoints_;
  FailoverTiming timing_;
  WatchState state_;
  std::vector<etcdserverpb::WatchResponse> delivered_;
  std::vector<size_t> tried_;
};

TEST_F(RunStreamsTest, RefusedByEveryMemberEndsTheWatchCanceled) {
  const Status refused(StatusCode::kPermissionDenied,
                       "rpc error: code = Unauthenticated desc = etcdserver: "
                       "invalid auth token");
  Run({refused, UnavailableError("down"), refused, refused, refused});
  // Endpoint 1 was down, not refusing: the watch went on to a second
  // round, and ended once 1 refused too.
  EXPECT_EQ(tried_, (std::vector<size_t>{0, 1, 2, 0, 1}));
  ASSERT_EQ(delivered_.size(), 2u);  // created, then the cancel
  EXPECT_TRUE(delivered_[1].canceled());
  EXPECT_EQ(delivered_[1].cancel_reason(), refused.message());
}

TEST_F(RunStreamsTest, RefusalsCountAgainOnceTheWatchMovesOn) {
  const Status refused(StatusCode::kUnauthenticated,
                       "etcdserver: invalid auth token");
  // 0 and 1 refuse, then every member delivers events again (a member
  // that lagged, a good token again): the count starts over, so 2's
  // refusal alone does not end the watch.
  Run({refused, refused, Status::Ok(), Status::Ok(), Status::Ok(), refused});
  EXPECT_EQ(tried_, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
  for (const auto& r : delivered_) EXPECT_FALSE(r.canceled());
}

// A learner refuses every stream at its start (etcd 3.4's kUnavailable
// "rpc not supported for learner"): the watch resumes on the next member.
TEST_F(RunStreamsTest, ALearnersRefusalResumesOnTheNextMember) {
  Run({Status(StatusCode::kUnavailable,
              "etcdserver: rpc not supported for learner"),
       Status::Ok()});
  EXPECT_EQ(tried_, (std::vector<size_t>{0, 1, 2}));
  ASSERT_EQ(delivered_.size(), 2u);  // created, then 1's event
  EXPECT_EQ(Revs(delivered_[1]), (std::vector<int64_t>{12}));
}

TEST_F(RunStreamsTest, OtherFailuresAreRetriedForever) {
  Run(std::vector<Status>(9, UnavailableError("down")));
  EXPECT_EQ(tried_.size(), 10u);
  for (const auto& r : delivered_) EXPECT_FALSE(r.canceled());
}

TEST(WatchStreamProgress, WaitsForCreatedThenSendsOnTheReadyStream) {
  WatchStreamProgress p;
  EXPECT_FALSE(p.SendNow());        // no stream yet: remembered
  EXPECT_TRUE(p.StreamCreated());   // the waiting request goes out now
  EXPECT_FALSE(p.StreamCreated());  // once
  EXPECT_TRUE(p.SendNow());         // ready: sent at once
  EXPECT_FALSE(p.StreamCreated());  // and not remembered
}

TEST(WatchStreamProgress, ABrokenOrNewStreamDefersToTheNextCreated) {
  WatchStreamProgress p;
  p.StreamCreated();
  p.SendFailed();  // the write failed: the stream is breaking
  p.StreamChanged();
  EXPECT_FALSE(p.SendNow());  // the next stream is not created yet
  EXPECT_TRUE(p.StreamCreated());

  p.StreamChanged();  // a stream ends with nothing asked
  EXPECT_FALSE(p.StreamCreated());

  p.SendFailed();  // even on a ready stream, a failed send waits
  EXPECT_TRUE(p.SendNow());
  EXPECT_TRUE(p.StreamCreated());
}

}  // namespace
}  // namespace kplane::storage
