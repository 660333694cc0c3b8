// pods/<name>/eviction over HTTP (apiserver/eviction.h): kube's 429 when a
// PodDisruptionBudget allows no disruption, the decrement with the
// budget's resourceVersion as precondition (two evictions cannot both take
// the last disruption), the DisruptionTarget condition and the delete.
#include "apiserver/eviction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "apiserver/test_server.h"

namespace kplane::apiserver {
namespace {

using ::testing::HasSubstr;
using testing::Response;
using testing::TestServer;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kPdbs[] =
    "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

// A Running pod on node-1, Ready unless `ready` is false.
void RunningPod(TestServer& s, const std::string& name, bool ready = true) {
  Response r = s.Post(kPods, R"({"metadata":{"name":")" + name +
                                 R"(","labels":{"app":"web"}},"spec":{
      "nodeName":"node-1","containers":[{"name":"c","image":"nginx"}]}})");
  ASSERT_EQ(r.code, 201) << r.body;
  Response st =
      s.Put(std::string(kPods) + "/" + name + "/status",
            R"({"metadata":{"name":")" + name +
                R"(","labels":{"app":"web"}},"spec":{"nodeName":"node-1",
      "containers":[{"name":"c","image":"nginx"}]},"status":{
      "phase":"Running","podIP":"10.244.0.9","conditions":[{"type":"Ready",
      "status":")" +
                (ready ? "True" : "False") + R"("}]}})");
  ASSERT_EQ(st.code, 200) << st.body;
}

// A budget over app=web with the status the disruption controller would
// have written.
void Budget(TestServer& s, const std::string& name, int allowed,
            int observed_generation = 1) {
  Response r = s.Post(kPdbs, R"({"metadata":{"name":")" + name +
                                 R"("},"spec":{"minAvailable":1,
      "selector":{"matchLabels":{"app":"web"}}}})");
  ASSERT_EQ(r.code, 201) << r.body;
  Response st =
      s.Put(std::string(kPdbs) + "/" + name + "/status",
            R"({"metadata":{"name":")" + name +
                R"("},"status":{"observedGeneration":)" +
                std::to_string(observed_generation) +
                R"(,"disruptionsAllowed":)" + std::to_string(allowed) +
                R"(,"currentHealthy":2,"desiredHealthy":1,
      "expectedPods":2}})");
  ASSERT_EQ(st.code, 200) << st.body;
}

Response Evict(TestServer& s, const std::string& pod,
               const std::string& name_in_body = "",
               const std::string& delete_options = "{}") {
  return s.Post(std::string(kPods) + "/" + pod + "/eviction",
                R"({"apiVersion":"policy/v1","kind":"Eviction",
      "metadata":{"name":")" +
                    (name_in_body.empty() ? pod : name_in_body) +
                    R"("},"deleteOptions":)" + delete_options + "}");
}

int64_t DeletionGracePeriod(TestServer& s, const std::string& pod) {
  Response r = s.Get(std::string(kPods) + "/" + pod);
  const rapidjson::Value* v = r.At({"metadata", "deletionGracePeriodSeconds"});
  return v != nullptr && v->IsInt64() ? v->GetInt64() : -1000;
}

bool Terminating(TestServer& s, const std::string& pod) {
  Response r = s.Get(std::string(kPods) + "/" + pod);
  return r.code == 404 || !r.Str({"metadata", "deletionTimestamp"}).empty();
}

TEST(EvictionTest, WithoutBudgetThePodIsDeletedAndMarked) {
  TestServer s;
  RunningPod(s, "a");
  Response r = Evict(s, "a");
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "Status");
  EXPECT_EQ(r.Str({"status"}), "Success");
  Response pod = s.Get(std::string(kPods) + "/a");
  ASSERT_EQ(pod.code, 200) << pod.body;
  EXPECT_FALSE(pod.Str({"metadata", "deletionTimestamp"}).empty());
  EXPECT_THAT(pod.body, HasSubstr(R"("type":"DisruptionTarget")"));
  EXPECT_THAT(pod.body, HasSubstr(R"("reason":"EvictionByEvictionAPI")"));

  EXPECT_EQ(Evict(s, "missing").code, 404);
  Response mismatch = Evict(s, "a", "b");
  EXPECT_EQ(mismatch.code, 400);
  EXPECT_EQ(mismatch.Str({"message"}),
            "name in URL does not match name in Eviction object");
}

// An Eviction's deleteOptions are checked as a DELETE's are: a negative
// grace period is 1 s (Kubernetes' defaulting; the smallest one once
// overflowed against the pod's current grace period), an unknown dryRun is
// 422 and deletes nothing.
TEST(EvictionTest, DeleteOptionsAreCheckedAsADeletes) {
  TestServer s;
  RunningPod(s, "a");
  Response bogus = Evict(s, "a", "", R"({"dryRun":["bogus"]})");
  EXPECT_EQ(bogus.code, 422) << bogus.body;
  EXPECT_THAT(bogus.body, HasSubstr("dryRun"));
  EXPECT_FALSE(Terminating(s, "a"));

  Response r = Evict(s, "a", "", R"({"gracePeriodSeconds":-5})");
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(DeletionGracePeriod(s, "a"), 1);
  // Again, with the smallest grace period there is, on the terminating pod.
  Response again =
      Evict(s, "a", "", R"({"gracePeriodSeconds":-9223372036854775808})");
  EXPECT_EQ(again.code, 201) << again.body;
  EXPECT_EQ(DeletionGracePeriod(s, "a"), 1);
  Response pod = s.Get(std::string(kPods) + "/a");
  ASSERT_EQ(pod.code, 200) << pod.body;
  EXPECT_THAT(pod.Str({"metadata", "deletionTimestamp"}),
              ::testing::MatchesRegex("20[0-9][0-9]-.*Z"));
}

TEST(EvictionTest, ABudgetWithoutDisruptionsAnswers429) {
  TestServer s;
  RunningPod(s, "a");
  Budget(s, "web", 0);
  Response r = Evict(s, "a");
  ASSERT_EQ(r.code, 429) << r.body;
  EXPECT_EQ(r.Str({"reason"}), "TooManyRequests");
  EXPECT_EQ(r.Str({"message"}), kEvictionDeniedMessage);
  EXPECT_THAT(r.body,
              HasSubstr(R"({"reason":"DisruptionBudget","message":"The )"
                        R"(disruption budget web needs 1 healthy pods and )"
                        R"(has 2 currently"})"));
  EXPECT_FALSE(Terminating(s, "a"));

  // A budget whose status is older than its spec is not trusted yet.
  RunningPod(s, "b");
  ASSERT_EQ(s.Delete(std::string(kPdbs) + "/web").code, 200);
  Budget(s, "fresh", 5, /*observed_generation=*/0);
  Response fresh = Evict(s, "b");
  ASSERT_EQ(fresh.code, 429) << fresh.body;
  EXPECT_THAT(fresh.body, HasSubstr("is still being processed by the server"));
  // kube's createTooManyRequestsError suggests 10 s.
  EXPECT_EQ(fresh.headers.Get("Retry-After"), "10");

  // Pods that are not running yet need no budget.
  ASSERT_EQ(s.Post(kPods, R"({"metadata":{"name":"pending","labels":{
      "app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}})")
                .code,
            201);
  EXPECT_EQ(Evict(s, "pending").code, 201);
}

TEST(EvictionTest, TheLastDisruptionIsTakenOnce) {
  TestServer s;
  RunningPod(s, "a");
  RunningPod(s, "b");
  Budget(s, "web", 1);
  Response first = Evict(s, "a");
  ASSERT_EQ(first.code, 201) << first.body;
  EXPECT_TRUE(Terminating(s, "a"));
  Response pdb = s.Get(std::string(kPdbs) + "/web");
  EXPECT_EQ((*pdb.At({"status", "disruptionsAllowed"})).GetInt(), 0);
  EXPECT_TRUE(pdb.At({"status", "disruptedPods"})->HasMember("a"));
  Response second = Evict(s, "b");
  EXPECT_EQ(second.code, 429) << second.body;
  EXPECT_FALSE(Terminating(s, "b"));
}

// Another eviction takes the disruption between this one's read of the
// budget and its write: the write's resourceVersion precondition fails,
// the budget is read again, and the answer is 429.
TEST(EvictionTest, AConcurrentEvictionMakesTheWriteConflict) {
  std::atomic<uint16_t> port{0};
  std::atomic<int> calls{0};
  TestServer s([&](ApiServerOptions* o) {
    o->eviction_budget_write_hook = [&](std::string_view pdb) {
      if (calls++ > 0) return;
      net::HttpClient other("127.0.0.1", port.load());
      net::HttpHeaders h;
      h.Add("Content-Type", "application/json");
      StatusOr<net::HttpResponse> r = other.Request(
          "PUT", std::string(kPdbs) + "/" + std::string(pdb) + "/status", h,
          R"({"metadata":{"name":"web"},"status":{"observedGeneration":1,
          "disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,
          "expectedPods":2}})");
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->status, 200) << r->body;
    };
  });
  port = s.port();
  RunningPod(s, "a");
  Budget(s, "web", 1);
  Response r = Evict(s, "a");
  EXPECT_EQ(r.code, 429) << r.body;
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(Terminating(s, "a"));
}

// A pod that needs no budget changes between the eviction's read and its
// delete (a kubelet's status write, a controller's label): kube does not
// guard a terminal or terminating pod with the read resourceVersion
// (shouldEnforceResourceVersion), and reads a Pending pod again after a
// conflict (retry.OnError(EvictionsRetry, IsConflict)) unless the client
// set the resourceVersion precondition itself. A 409 here fails
// `kubectl drain`.
TEST(EvictionTest, APodThatChangesBeforeTheDirectDeleteIsStillEvicted) {
  std::atomic<uint16_t> port{0};
  std::atomic<int> changes{0};  // how many reads the hook still follows
  std::atomic<int> touched{0};
  TestServer s([&](ApiServerOptions* o) {
    o->eviction_pod_delete_hook = [&](std::string_view pod) {
      if (changes.fetch_sub(1) <= 0) return;
      net::HttpClient other("127.0.0.1", port.load());
      net::HttpHeaders h;
      h.Add("Content-Type", "application/merge-patch+json");
      StatusOr<net::HttpResponse> r =
          other.Request("PATCH", std::string(kPods) + "/" + std::string(pod), h,
                        R"({"metadata":{"labels":{"touched":")" +
                            std::to_string(++touched) + R"("}}})");
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->status, 200) << r->body;
    };
  });
  port = s.port();

  // Terminal.
  RunningPod(s, "done");
  Response st = s.Patch(std::string(kPods) + "/done/status",
                        R"({"status":{"phase":"Succeeded"}})",
                        "application/merge-patch+json");
  ASSERT_EQ(st.code, 200) << st.body;
  changes = 1;
  Response done = Evict(s, "done");
  EXPECT_EQ(done.code, 201) << done.body;
  EXPECT_TRUE(Terminating(s, "done"));

  // Terminating.
  RunningPod(s, "leaving");
  ASSERT_EQ(s.Delete(std::string(kPods) + "/leaving").code, 200);
  ASSERT_TRUE(Terminating(s, "leaving"));
  changes = 1;
  Response leaving = Evict(s, "leaving");
  EXPECT_EQ(leaving.code, 201) << leaving.body;

  // Pending: guarded by the resourceVersion, read again after the conflict.
  ASSERT_EQ(s.Post(kPods, R"({"metadata":{"name":"pending"},"spec":{
      "containers":[{"name":"c","image":"nginx"}]}})")
                .code,
            201);
  changes = 1;
  Response pending = Evict(s, "pending");
  EXPECT_EQ(pending.code, 201) << pending.body;
  EXPECT_TRUE(Terminating(s, "pending"));

  // The client's own precondition is not retried.
  ASSERT_EQ(s.Post(kPods, R"({"metadata":{"name":"pinned"},"spec":{
      "containers":[{"name":"c","image":"nginx"}]}})")
                .code,
            201);
  const std::string rv = s.Get(std::string(kPods) + "/pinned")
                             .Str({"metadata", "resourceVersion"});
  changes = 1;
  Response pinned =
      Evict(s, "pinned", "",
            R"({"preconditions":{"resourceVersion":")" + rv + R"("}})");
  EXPECT_EQ(pinned.code, 409) << pinned.body;
  EXPECT_FALSE(Terminating(s, "pinned"));
}

TEST(EvictionTest, UnreadyPodsAndTwoBudgets) {
  TestServer s;
  // Not Ready, and the budget is met without it: deleted, budget kept.
  RunningPod(s, "sick", /*ready=*/false);
  Budget(s, "web", 0);
  ASSERT_EQ(Evict(s, "sick").code, 201);
  Response pdb = s.Get(std::string(kPdbs) + "/web");
  EXPECT_EQ(pdb.At({"status", "disruptedPods"}), nullptr);

  RunningPod(s, "a");
  Budget(s, "web2", 3);
  Response two = Evict(s, "a");
  EXPECT_EQ(two.code, 500) << two.body;
  EXPECT_EQ(two.Str({"message"}),
            "This pod has more than one PodDisruptionBudget, which the "
            "eviction subresource does not support.");
}

}  // namespace
}  // namespace kplane::apiserver
