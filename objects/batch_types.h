// The generated types of batch/v1 Job and CronJob
// (schemas/k8s/batch.proto, as batchv1). Apart from types.h so that only
// the files that handle Jobs include them.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_OBJECTS_BATCH_TYPES_H_
#define KPLANE_OBJECTS_BATCH_TYPES_H_

#include "objects/types.h"
#include "schemas/k8s/batch.pb.h"

namespace kplane::objects {

namespace batchv1 = ::k8s::io::api::batch::v1;

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_BATCH_TYPES_H_
