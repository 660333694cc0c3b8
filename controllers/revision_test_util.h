// Test helpers for controllers that keep ControllerRevisions: reflects the
// revision writes a FakeApiWriter recorded into the revisions cache, as the
// informer would, and splits them off the action list.
//
//   std::vector<std::string> rev_actions;
//   auto other = ReflectRevisionWrites(fake, &revisions, &rev_actions);
//
// Thread-safety: test-only, single thread. Errors: n/a.
#ifndef KPLANE_CONTROLLERS_REVISION_TEST_UTIL_H_
#define KPLANE_CONTROLLERS_REVISION_TEST_UTIL_H_

#include <string>
#include <vector>

#include "controllers/api_writer.h"
#include "informer/indexer.h"
#include "objects/apps_workloads_types.h"

namespace kplane::controllers::testing {

// The actions other than those on controllerrevisions; those go to
// `revision_actions`, and their objects into (or, deleted, out of) `cache`.
inline std::vector<std::string> ReflectRevisionWrites(
    const FakeApiWriter& fake, informer::Indexer* cache,
    std::vector<std::string>* revision_actions) {
  std::vector<std::string> other;
  for (const std::string& a : fake.Actions()) {
    if (a.find(" controllerrevisions ") == std::string::npos) {
      other.push_back(a);
      continue;
    }
    revision_actions->push_back(a);
    if (a.rfind("delete ", 0) == 0) cache->Delete(a.substr(a.rfind(' ') + 1));
  }
  for (const ObjectPtr& w : fake.Written()) {
    if (std::dynamic_pointer_cast<const appsv1::ControllerRevision>(w)) {
      cache->Upsert(w);
    }
  }
  return other;
}

}  // namespace kplane::controllers::testing

#endif  // KPLANE_CONTROLLERS_REVISION_TEST_UTIL_H_
