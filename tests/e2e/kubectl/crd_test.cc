// CustomResourceDefinitions with the real kubectl against the control plane
// in process (security on, the admin's kubeconfig): apply a CRD and a custom
// resource, find it in api-resources, get it by plural, short name and
// category with its printer columns, patch, scale and re-apply it, and
// delete the CRD with its objects; a CRD with a structural schema: invalid
// custom resources refused with kube's field errors, unknown fields pruned
// (or reported under --validate=strict/warn), defaults applied.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cmd/kplane/control_plane.h"
#include "tests/e2e/kubectl/kubectl_versions.h"
#include "tests/e2e/kubectl/process.h"
#include "tests/e2e/kubectl/up_fixture.h"

namespace kplane::e2e {
namespace {

constexpr char kCrd[] = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.size
        statusReplicasPath: .status.size
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
)";

constexpr char kWidget[] = R"(apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  labels: {tier: front}
spec:
  size: 3
  color: blue
)";

class CrdE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-crd-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cmd::UpOptions o;
    o.data_dir = dir_ + "/data";
    o.apiserver_port = 0;
    o.store_port = 0;
    o.nodes = 0;
    o.controllers = WithControllers();
    o.kubeletsim_port = -1;
    o.controller_manager_port = -1;
    o.kubeconfig_out = dir_ + "/kubeconfig";
    auto cp = cmd::ControlPlane::Start(o);
    ASSERT_TRUE(cp.ok()) << cp.status();
    cp_ = std::move(*cp);
  }
  // Whether the controller manager runs (as system:kube-controller-manager,
  // RBAC on).
  virtual bool WithControllers() const { return false; }
  void TearDown() override {
    cp_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  RunResult Kubectl(std::vector<std::string> args) {
    return KubectlAt("kubectl", std::move(args));
  }
  // `binary` with its own discovery and OpenAPI cache.
  RunResult KubectlAt(const std::string& binary,
                      std::vector<std::string> args) {
    std::vector<std::string> argv = {
        binary, "--cache-dir",
        dir_ + "/cache-" + std::filesystem::path(binary).filename().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, {"KUBECONFIG=" + dir_ + "/kubeconfig", "HOME=" + dir_});
    p.Start();
    return p.Wait(std::chrono::milliseconds(90000));
  }
  std::string MustKubectl(std::vector<std::string> args,
                          const std::string& binary = "kubectl") {
    RunResult r = KubectlAt(binary, args);
    std::string cmd = binary == "kubectl" ? "" : " (" + binary + ")";
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << cmd << "\n" << r.out << r.err;
    return r.out;
  }
  std::string File(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  std::string dir_;
  std::unique_ptr<cmd::ControlPlane> cp_;
};

TEST_F(CrdE2eTest, ApplyGetPatchAndDeleteWithKubectl) {
  EXPECT_NE(MustKubectl({"apply", "-f", File("crd.yaml", kCrd)})
                .find("customresourcedefinition.apiextensions.k8s.io/"
                      "widgets.example.com created"),
            std::string::npos);
  MustKubectl({"wait", "--for=condition=Established", "crd/widgets.example.com",
               "--timeout=30s"});
  std::string resources =
      MustKubectl({"api-resources", "--api-group=example.com"});
  EXPECT_NE(resources.find("widgets"), std::string::npos) << resources;
  EXPECT_NE(resources.find("wd"), std::string::npos) << resources;
  EXPECT_NE(resources.find("example.com/v1"), std::string::npos) << resources;

  EXPECT_NE(MustKubectl({"apply", "-f", File("w1.yaml", kWidget)})
                .find("widget.example.com/w1 created"),
            std::string::npos);
  std::string table = MustKubectl({"get", "widgets"});
  EXPECT_NE(table.find("NAME"), std::string::npos) << table;
  EXPECT_NE(table.find("SIZE"), std::string::npos) << table;
  EXPECT_NE(table.find("COLOR"), std::string::npos) << table;
  EXPECT_NE(table.find("AGE"), std::string::npos) << table;
  EXPECT_NE(table.find("w1     3      blue"), std::string::npos) << table;
  EXPECT_NE(MustKubectl({"get", "wd", "-l", "tier=front", "-o", "name"})
                .find("widget.example.com/w1"),
            std::string::npos);
  EXPECT_NE(MustKubectl({"get", "all"}).find("widget.example.com/w1"),
            std::string::npos);

  MustKubectl({"patch", "widget", "w1", "--type=merge", "-p",
               R"({"spec":{"size":5}})"});
  EXPECT_EQ(MustKubectl({"get", "widget", "w1", "-o", "jsonpath={.spec.size}"}),
            "5");
  EXPECT_NE(MustKubectl({"scale", "widget", "w1", "--replicas=4"})
                .find("widget.example.com/w1 scaled"),
            std::string::npos);
  EXPECT_EQ(MustKubectl({"get", "widget", "w1", "-o", "jsonpath={.spec.size}"}),
            "4");
  // Applied again with a change: the client-side apply patch is a merge
  // patch for custom resources.
  std::string changed = kWidget;
  changed.replace(changed.find("blue"), 4, "red");
  MustKubectl({"apply", "-f", File("w1.yaml", changed)});
  EXPECT_EQ(
      MustKubectl({"get", "widget", "w1", "-o", "jsonpath={.spec.color}"}),
      "red");

  MustKubectl({"delete", "crd", "widgets.example.com", "--timeout=60s"});
  RunResult gone = Kubectl({"get", "widgets"});
  EXPECT_NE(gone.exit_code, 0) << gone.out;
  // kubectl's discovery cache still knows the resource (as against
  // kube-apiserver): the list itself answers 404.
  EXPECT_TRUE(
      gone.err.find("the server could not find the requested resource") !=
          std::string::npos ||
      gone.err.find("the server doesn't have a resource type") !=
          std::string::npos)
      << gone.err;
  // Created again, the collection is empty: the CRD took its objects along.
  MustKubectl({"apply", "-f", File("crd.yaml", kCrd)});
  MustKubectl({"wait", "--for=condition=Established", "crd/widgets.example.com",
               "--timeout=30s"});
  RunResult empty = Kubectl({"get", "widgets", "-o", "name"});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "");
}

constexpr char kGadgetCrd[] = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
              color: {type: string, enum: [red, blue], default: red}
              name: {type: string, pattern: '^[a-z]+$'}
)";

std::string Gadget(const std::string& name, const std::string& spec) {
  return "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: " +
         name + "\nspec:\n" + spec;
}

TEST_F(CrdE2eTest, SchemaValidatesPrunesAndDefaults) {
  // A schema that is not structural is refused with kube's message.
  std::string non_structural = kGadgetCrd;
  non_structural.replace(
      non_structural.find("          spec:\n            type: object\n"),
      std::string("          spec:\n            type: object\n").size(),
      "          spec:\n");
  RunResult refused =
      Kubectl({"apply", "-f", File("bad-crd.yaml", non_structural)});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("spec.versions[0].schema.openAPIV3Schema."
                             "properties[spec].type: Required value: must not "
                             "be empty for specified object fields"),
            std::string::npos)
      << refused.err;

  MustKubectl({"apply", "-f", File("gadgets.yaml", kGadgetCrd)});
  MustKubectl({"wait", "--for=condition=Established", "crd/gadgets.example.com",
               "--timeout=30s"});

  // Invalid: kube's 422 with the field paths.
  RunResult invalid = Kubectl(
      {"apply", "-f",
       File("g-bad.yaml", Gadget("g0", "  size: 20\n  color: pink\n"))});
  EXPECT_NE(invalid.exit_code, 0) << invalid.out;
  EXPECT_NE(invalid.err.find(R"(The Gadget "g0" is invalid: )"),
            std::string::npos)
      << invalid.err;
  EXPECT_NE(invalid.err.find("spec.size: Invalid value: 20: spec.size in body "
                             "should be less than or equal to 10"),
            std::string::npos)
      << invalid.err;
  EXPECT_NE(invalid.err.find(R"(spec.color: Unsupported value: "pink": )"
                             R"(supported values: "red", "blue")"),
            std::string::npos)
      << invalid.err;
  RunResult missing = Kubectl(
      {"create", "-f", File("g-missing.yaml", Gadget("g0", "  name: abc\n"))});
  EXPECT_NE(missing.err.find("spec.size: Required value"), std::string::npos)
      << missing.err;

  // Unknown fields: refused under --validate=strict, a warning under warn,
  // pruned silently under ignore; the default color is set.
  const std::string with_extra = Gadget("g1", "  size: 2\n  extra: 1\n");
  RunResult strict = Kubectl(
      {"apply", "--validate=strict", "-f", File("g1.yaml", with_extra)});
  EXPECT_NE(strict.exit_code, 0) << strict.out;
  EXPECT_NE(strict.err.find(R"(unknown field "spec.extra")"), std::string::npos)
      << strict.err;
  RunResult warn =
      Kubectl({"apply", "--validate=warn", "-f", File("g1.yaml", with_extra)});
  EXPECT_EQ(warn.exit_code, 0) << warn.err;
  EXPECT_NE(warn.err.find(R"(Warning: unknown field "spec.extra")"),
            std::string::npos)
      << warn.err;
  EXPECT_EQ(MustKubectl({"get", "gadget", "g1", "-o", "jsonpath={.spec}"}),
            R"({"color":"red","size":2})");
  MustKubectl({"apply", "--validate=false", "-f",
               File("g2.yaml", Gadget("g2",
                                      "  size: 3\n  color: blue\n"
                                      "  more: {a: 1}\n"))});
  EXPECT_EQ(MustKubectl({"get", "gadget", "g2", "-o", "jsonpath={.spec}"}),
            R"({"color":"blue","size":3})");
  // A merge patch to an invalid value is refused as well.
  RunResult patched = Kubectl({"patch", "gadget", "g2", "--type=merge", "-p",
                               R"({"spec":{"name":"UPPER"}})"});
  EXPECT_NE(patched.exit_code, 0);
  EXPECT_NE(patched.err.find(R"(spec.name: Invalid value: "UPPER": spec.name )"
                             R"(in body should match '^[a-z]+$')"),
            std::string::npos)
      << patched.err;
}

// A CRD with a structural schema, for explain, validation and diff.
constexpr char kGizmoCrd[] = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {plural: gizmos, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A Gizmo turns cranks.
        properties:
          spec:
            type: object
            description: What the gizmo should do.
            required: [cranks]
            properties:
              cranks: {type: integer, description: How many cranks to turn.}
              color: {type: string, enum: [red, blue]}
              gears:
                type: array
                items:
                  type: object
                  properties:
                    teeth: {type: integer, description: Teeth on the gear.}
)";

constexpr char kGizmo[] = R"(apiVersion: example.io/v1
kind: Gizmo
metadata:
  name: g1
spec:
  cranks: 3
  color: red
  gears: [{teeth: 12}]
)";

TEST_F(CrdE2eTest, ExplainApplyAndDiffCustomResourcesFromOpenApi) {
  MustKubectl({"apply", "-f", File("gizmo-crd.yaml", kGizmoCrd)});
  MustKubectl({"wait", "--for=condition=Established", "crd/gizmos.example.io",
               "--timeout=30s"});
  std::vector<std::string> binaries = {"kubectl"};
  const std::string k127 = KubectlBeside("1.27");
  ASSERT_FALSE(k127.empty()) << "kubectl.1.27 beside kubectl";
  binaries.push_back(k127);
  for (const std::string& k : binaries) {
    SCOPED_TRACE(k);
    // explain reads the schema (OpenAPI v3 in 1.27+).
    const std::string top = MustKubectl({"explain", "gizmo"}, k);
    EXPECT_NE(top.find("KIND:       Gizmo"), std::string::npos) << top;
    EXPECT_NE(top.find("A Gizmo turns cranks."), std::string::npos) << top;
    EXPECT_NE(top.find("metadata\t<ObjectMeta>"), std::string::npos) << top;
    const std::string rec =
        MustKubectl({"explain", "gizmo.spec", "--recursive"}, k);
    EXPECT_NE(rec.find("cranks\t<integer> -required-"), std::string::npos)
        << rec;
    EXPECT_NE(rec.find("teeth\t<integer>"), std::string::npos) << rec;
    const std::string field = MustKubectl({"explain", "gizmo.spec.cranks"}, k);
    EXPECT_NE(field.find("How many cranks to turn."), std::string::npos)
        << field;
    // The OpenAPI v2 form of explain (from the protobuf document).
    const std::string v2 = MustKubectl(
        {"explain", "gizmo.spec.gears", "--output=plaintext-openapiv2"}, k);
    EXPECT_NE(v2.find("teeth\t<integer>"), std::string::npos) << v2;
    EXPECT_NE(v2.find("Teeth on the gear."), std::string::npos) << v2;
  }
  // apply with validation on (kubectl's default), both clients. (Both find
  // fieldValidation among the CR's OpenAPI parameters and hand validation
  // to the server.)
  for (const std::string& k : binaries) {
    SCOPED_TRACE(k);
    EXPECT_NE(
        MustKubectl({"apply", "--validate=true", "-f", File("g1.yaml", kGizmo)},
                    k)
            .find("gizmo.example.io/g1"),
        std::string::npos);
  }
  // diff: the change, exit code 1 (differences found).
  std::string changed = kGizmo;
  changed.replace(changed.find("cranks: 3"), 9, "cranks: 5");
  RunResult diff = Kubectl({"diff", "-f", File("g1-changed.yaml", changed)});
  EXPECT_EQ(diff.exit_code, 1) << diff.out << diff.err;
  EXPECT_NE(diff.out.find("-  cranks: 3"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("+  cranks: 5"), std::string::npos) << diff.out;
  RunResult same = Kubectl({"diff", "-f", File("g1.yaml", kGizmo)});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
}

// The Python client's dynamic client (dynamic_client_crd.py): discovery,
// create, get, list by label, watch, merge and JSON patches, delete.
TEST_F(CrdE2eTest, PythonDynamicClientDrivesCustomResources) {
  MustKubectl({"apply", "-f", File("gizmo-crd.yaml", kGizmoCrd)});
  MustKubectl({"wait", "--for=condition=Established", "crd/gizmos.example.io",
               "--timeout=30s"});
  Process p({"/usr/bin/python3", DYNAMIC_CLIENT_SCRIPT, dir_ + "/kubeconfig",
             "default"},
            {"HOME=" + dir_});
  p.Start();
  RunResult r = p.Wait(std::chrono::milliseconds(90000));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("discovered example.io/v1 gizmos"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("watched [('ADDED', 'g1', 1), ('MODIFIED', 'g1', 2)]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nok\n"), std::string::npos) << r.out << r.err;
}

// Garbage collection of custom resources with the controller manager
// running under its own RBAC role: `kubectl delete` of an owning custom
// resource takes a dependent custom resource and a ConfigMap with it;
// `--cascade=orphan` keeps them, their ownerReferences removed.
class CrdGcE2eTest : public CrdE2eTest {
 protected:
  bool WithControllers() const override { return true; }

  // Creates widget "parent" and, owned by it, widget "child" and ConfigMap
  // "settings".
  void CreateFamily() {
    MustKubectl(
        {"apply", "-f", File("parent.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: parent}
spec: {size: 1}
)")});
    std::string uid = MustKubectl(
        {"get", "widget", "parent", "-o", "jsonpath={.metadata.uid}"});
    ASSERT_FALSE(uid.empty());
    std::string owner =
        "  ownerReferences:\n  - apiVersion: example.com/v1\n"
        "    kind: Widget\n    name: parent\n    uid: " +
        uid + "\n";
    MustKubectl({"apply", "-f",
                 File("dependents.yaml",
                      "apiVersion: example.com/v1\nkind: Widget\n"
                      "metadata:\n  name: child\n" +
                          owner +
                          "spec: {size: 2}\n---\n"
                          "apiVersion: v1\nkind: ConfigMap\n"
                          "metadata:\n  name: settings\n" +
                          owner + "data: {k: v}\n")});
  }
};

TEST_F(CrdGcE2eTest, KubectlDeleteCascadesToDependentsOrOrphansThem) {
  MustKubectl({"apply", "-f", File("crd.yaml", kCrd)});
  MustKubectl({"wait", "--for=condition=Established", "crd/widgets.example.com",
               "--timeout=30s"});
  CreateFamily();
  ASSERT_FALSE(HasFailure());
  MustKubectl({"delete", "widget", "parent", "--timeout=60s"});
  MustKubectl({"wait", "--for=delete", "widget/child", "configmap/settings",
               "--timeout=60s"});

  CreateFamily();
  ASSERT_FALSE(HasFailure());
  // kubectl waits for the owner to go: the collector must remove the
  // `orphan` finalizer after the references.
  MustKubectl(
      {"delete", "widget", "parent", "--cascade=orphan", "--timeout=60s"});
  EXPECT_EQ(MustKubectl({"get", "widget", "child", "-o",
                         "jsonpath={.metadata.ownerReferences}"}),
            "");
  EXPECT_EQ(MustKubectl({"get", "configmap", "settings", "-o",
                         "jsonpath={.metadata.ownerReferences}"}),
            "");
}

// --- The same proof in every kubectl version (issues #19, #20) ---
//
// One control plane for the suite; each version applies a CRD of its own
// (kind Sprocket<minor>, so kinds and short names never collide) and goes
// through what a user does with one: apply, explain (the custom kind and
// the CRD type itself), apply and diff with validation on, get with the
// printer columns, an invalid object refused with kube's 422 message, and
// scale through the scale subresource.
class CrdInEveryKubectl : public KplaneUpSuiteTest<CrdInEveryKubectl> {
 public:
  static void SetUpTestSuite() { StartSharedControlPlane(/*nodes=*/0); }
};

std::string SprocketCrd(const std::string& v) {
  return R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets)" +
         v + R"(.kversions.example.com
spec:
  group: kversions.example.com
  scope: Namespaced
  names: {plural: sprockets)" +
         v + ", kind: Sprocket" + v + ", shortNames: [sp" + v + R"(]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A Sprocket meshes with a chain.
        properties:
          spec:
            type: object
            description: How the sprocket turns.
            required: [replicas]
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10, description: How many sprockets turn.}
              color: {type: string, enum: [red, blue]}
              teeth:
                type: array
                items: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
)";
}

std::string Sprocket(const std::string& v, const std::string& name,
                     const std::string& spec) {
  return "apiVersion: kversions.example.com/v1\nkind: Sprocket" + v +
         "\nmetadata:\n  name: " + name + "\nspec:\n" + spec;
}

bool Contains(const std::string& text, const std::string& re) {
  return std::regex_search(text, std::regex(re));
}

TEST_P(CrdInEveryKubectl, ApplyExplainDiffGetRefuseAndScale) {
  StatusOr<KubectlVersion> k = FindKubectlVersion(GetParam());
  if (!k.ok()) GTEST_SKIP() << k.status().message();
  const std::string v = std::to_string(100 + k->minor);  // "120", "127"...
  const std::string kind = "Sprocket" + v;
  const std::string crd_name = "sprockets" + v + ".kversions.example.com";
  auto run = [&](std::vector<std::string> args) {
    return up().KubectlAt(k->binary, std::move(args));
  };
  auto must = [&](std::vector<std::string> args) {
    RunResult r = run(args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << cmd << "\n" << r.out << r.err;
    return r.out;
  };

  // A CRD with a field apiextensions does not define is refused: by
  // kubectl 1.20 on the client (the CRD type's definitions in
  // /openapi/v2), by the server's strict decoding for 1.27+.
  std::string typo = SprocketCrd(v);
  typo.replace(typo.find("  scope: Namespaced\n"), 0, "  scopee: Namespaced\n");
  RunResult refused =
      run({"apply", "-f", up().WriteFile(v + "-typo-crd.yaml", typo)});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find(k->client_side_validation
                                 ? "ValidationError(CustomResourceDefinition."
                                   "spec): unknown field \"scopee\""
                                 : "strict decoding error: unknown field "
                                   "\"spec.scopee\""),
            std::string::npos)
      << refused.err;

  // apply: kubectl 1.20 validates the CRD manifest itself against the
  // CustomResourceDefinition definitions of /openapi/v2 first.
  EXPECT_EQ(
      must({"apply", "-f", up().WriteFile(v + "-crd.yaml", SprocketCrd(v))}),
      "customresourcedefinition.apiextensions.k8s.io/" + crd_name +
          " created\n");
  must({"wait", "--for=condition=Established", "crd/" + crd_name,
        "--timeout=60s"});

  // explain the custom kind: from /openapi/v3 in 1.27+, /openapi/v2 in 1.20.
  const std::string singular = "sprocket" + v;
  const std::string top = must({"explain", singular});
  EXPECT_TRUE(Contains(top, "KIND:\\s+" + kind + "\n")) << top;
  EXPECT_NE(top.find("A Sprocket meshes with a chain."), std::string::npos)
      << top;
  const std::string field = must({"explain", singular + ".spec.replicas"});
  EXPECT_NE(field.find("How many sprockets turn."), std::string::npos) << field;
  const std::string spec = must({"explain", singular + ".spec"});
  EXPECT_TRUE(Contains(spec, "replicas\\s+<integer> -required-")) << spec;
  const std::string rec = must({"explain", singular, "--recursive"});
  EXPECT_TRUE(Contains(rec, "\n\\s+teeth\\s+<\\[\\]integer>\n")) << rec;
  // explain the CRD type itself (it has to be in the server's OpenAPI).
  const std::string schema = must({"explain", "crd.spec.versions.schema"});
  EXPECT_TRUE(Contains(schema, "KIND:\\s+CustomResourceDefinition\n"))
      << schema;
  EXPECT_TRUE(Contains(schema, "openAPIV3Schema\\s+<(Object|JSONSchemaProps)>"))
      << schema;
  const std::string names =
      must({"explain", "customresourcedefinitions.spec.names"});
  EXPECT_TRUE(Contains(names, "plural\\s+<string> -required-")) << names;

  // apply with validation on (1.20: on the client from /openapi/v2;
  // 1.27+: fieldValidation=Strict on the server), then diff.
  const std::string s1 =
      Sprocket(v, "s1", "  replicas: 2\n  color: red\n  teeth: [12]\n");
  EXPECT_EQ(must({"apply", "--validate=true", "-f",
                  up().WriteFile(v + "-s1.yaml", s1)}),
            "sprocket" + v + ".kversions.example.com/s1 created\n");
  std::string changed = s1;
  changed.replace(changed.find("replicas: 2"), 11, "replicas: 3");
  RunResult diff =
      run({"diff", "-f", up().WriteFile(v + "-s1-changed.yaml", changed)});
  EXPECT_EQ(diff.exit_code, 1) << diff.out << diff.err;  // differences
  EXPECT_NE(diff.out.find("-  replicas: 2"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("+  replicas: 3"), std::string::npos) << diff.out;
  RunResult same = run({"diff", "-f", up().WriteFile(v + "-s1.yaml", s1)});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  // An unknown field is refused before anything is stored: by the client
  // (1.20) or the server's strict decoding (1.27+).
  RunResult unknown =
      run({"apply", "--validate=true", "-f",
           up().WriteFile(v + "-unknown.yaml",
                          Sprocket(v, "s2", "  replicas: 1\n  wheels: 4\n"))});
  EXPECT_NE(unknown.exit_code, 0) << unknown.out;
  EXPECT_TRUE(
      k->client_side_validation
          ? Contains(unknown.err, "ValidationError\\(" + kind +
                                      "\\.spec\\): unknown field \"wheels\"")
          : Contains(unknown.err, "unknown field \"spec.wheels\""))
      << unknown.err;

  // get: the CRD's printer columns (the server's Table).
  const std::string table = must({"get", "sprockets" + v});
  EXPECT_TRUE(Contains(table, "NAME\\s+REPLICAS\\s+COLOR\\s+AGE\n")) << table;
  EXPECT_TRUE(Contains(table, "\ns1\\s+2\\s+red\\s+\\S+\n")) << table;
  EXPECT_EQ(must({"get", "sp" + v, "-o", "name"}),
            "sprocket" + v + ".kversions.example.com/s1\n");

  // Refused by the schema: kube's 422 (Invalid) with the field errors.
  RunResult bad =
      run({"create", "-v=6", "-f",
           up().WriteFile(v + "-bad.yaml", Sprocket(v, "bad",
                                                    "  replicas: 20\n"
                                                    "  color: pink\n"))});
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  // -v=6 logs the response: `POST <url> 422 ...` (1.33: `verb="POST"
  // url="<url>" status="422 ..."`).
  EXPECT_TRUE(Contains(bad.err,
                       "POST\"? (url=\")?https://127\\.0\\.0\\.1:[0-9]+/apis/"
                       "kversions\\.example\\.com/v1/namespaces/"
                       "default/sprockets" +
                           v + "[^ ]* (status=\")?422 Unprocessable Entity"))
      << bad.err;
  EXPECT_NE(bad.err.find("spec.replicas: Invalid value: 20: spec.replicas in "
                         "body should be less than or equal to 10"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find(R"(spec.color: Unsupported value: "pink": )"
                         R"(supported values: "red", "blue")"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(run({"get", "sprocket" + v, "bad"}).exit_code, 1);

  // scale: through /scale (spec.replicas), as for a Deployment.
  EXPECT_EQ(must({"scale", "sprocket" + v, "s1", "--replicas=4"}),
            "sprocket" + v + ".kversions.example.com/s1 scaled\n");
  EXPECT_EQ(
      must({"get", "sprocket" + v, "s1", "-o", "jsonpath={.spec.replicas}"}),
      "4");
}

INSTANTIATE_TEST_SUITE_P(Versions, CrdInEveryKubectl,
                         ::testing::ValuesIn(kKubectlVersionNames),
                         KubectlVersionParamName);

}  // namespace
}  // namespace kplane::e2e
