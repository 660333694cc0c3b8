// Output formats of kpctl get and friends.
//
// TabWriter lays rows out as kubectl's printers do (Go text/tabwriter with
// minwidth 6, padding 3, RememberWidths): every column but the last is
// padded to its widest cell plus three spaces, and widths only grow across
// flushes, so rows printed one by one under `get -w` stay aligned:
//   NAME    READY   STATUS    RESTARTS   AGE
//   web-0   1/1     Running   0          5m3s
//
// Tables: the API server's meta.k8s.io/v1 Table (columnDefinitions, rows
// with cells and a PartialObjectMetadata `object`) becomes rows; priority-1
// columns only with wide; NAMESPACE (from row.object.metadata.namespace)
// first with all-namespaces; LABELS last with show_labels; the name column
// (format "name") is prefixed "kind/" when several kinds are printed.
//
// JSON and YAML: objects print with sorted keys (Go marshals maps that
// way); JSON is indented by four spaces like kubectl. A list becomes
// kubectl's `kind: List` with apiVersion/kind filled into every item;
// metadata.managedFields is dropped unless asked for.
//
// Thread-safety: TabWriter is used by one thread; functions are pure.
#ifndef KPLANE_KPCTL_KUBE_PRINTER_H_
#define KPLANE_KPCTL_KUBE_PRINTER_H_

#include <rapidjson/document.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "objects/scheme.h"

namespace kplane::kpctl::kube {

class TabWriter {
 public:
  explicit TabWriter(std::ostream* out) : out_(out) {}
  void AddRow(std::vector<std::string> cells);
  // Writes the buffered rows; widths are remembered for later rows.
  void Flush();

 private:
  std::ostream* out_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> widths_;
};

struct TableOptions {
  bool wide = false;
  bool all_namespaces = false;
  bool show_labels = false;
  // -L: one column per label key, headed by its last path segment
  // upper-cased (app.kubernetes.io/name -> NAME).
  std::vector<std::string> label_columns;
  bool kind_prefix = false;  // "deployment.apps/web" in the name column
  std::string kind_group;    // the prefix, e.g. "deployment.apps"
  bool no_headers = false;
};

// The header row for `table` (columnDefinitions), upper-cased like kubectl.
std::vector<std::string> TableHeader(const rapidjson::Value& table,
                                     const TableOptions& options);
// The rows of `table`. `definitions` (a Table holding columnDefinitions)
// stands in for a watch event's Table, which carries rows only.
std::vector<std::vector<std::string>> TableRows(
    const rapidjson::Value& table, const TableOptions& options,
    const rapidjson::Value* definitions = nullptr);

// "app=web,tier=fe" or "<none>" from metadata.labels.
std::string LabelsString(const rapidjson::Value& metadata);

// A cell as kubectl prints it: strings verbatim, integers in decimal,
// booleans true/false, null "<none>".
std::string CellString(const rapidjson::Value& cell);

// Strips metadata.managedFields from an object or from every list item.
void DropManagedFields(rapidjson::Value& obj);

// kubectl's `kind: List` for a list answer of resource `r`.
rapidjson::Document ToPrintableList(const rapidjson::Value& list,
                                    const objects::ResourceInfo& r);
// Sets apiVersion and kind on an object that lacks them.
void FillTypeMeta(rapidjson::Value& obj, const objects::ResourceInfo& r,
                  rapidjson::Document::AllocatorType& alloc);

// Four-space indented JSON with sorted keys, ending in a newline.
std::string PrettyJson(const rapidjson::Value& v);
// One YAML document (objects::JsonToYaml), ending in a newline.
std::string ToYaml(const rapidjson::Value& v);

// The string at obj.a.b.c, "" when absent or not a string.
std::string StrAt(const rapidjson::Value& obj,
                  std::initializer_list<const char*> path);
// The value at obj.a.b.c, nullptr when absent.
const rapidjson::Value* At(const rapidjson::Value& obj,
                           std::initializer_list<const char*> path);
// The integer at obj.a.b.c, `def` when absent.
int64_t IntAt(const rapidjson::Value& obj,
              std::initializer_list<const char*> path, int64_t def = 0);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_PRINTER_H_
