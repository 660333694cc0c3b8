#include "objects/meta.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/time.h"
#include "objects/types.h"

namespace kplane::objects {
namespace {

using ::testing::ElementsAre;

TEST(Meta, ObjectMetaOfAnyObject) {
  appsv1::Deployment d;
  d.mutable_metadata()->set_name("web");
  d.mutable_metadata()->set_namespace_("default");
  d.mutable_metadata()->set_uid("u1");
  d.mutable_metadata()->set_generation(4);
  google::protobuf::Message& m = d;
  ASSERT_NE(GetObjectMeta(m), nullptr);
  EXPECT_EQ(GetObjectMeta(m), &d.metadata());
  EXPECT_EQ(Name(m), "web");
  EXPECT_EQ(Namespace(m), "default");
  EXPECT_EQ(Uid(m), "u1");
  EXPECT_EQ(Generation(m), 4);
  SetResourceVersion(&m, "42");
  EXPECT_EQ(d.metadata().resourceversion(), "42");
  EXPECT_EQ(ResourceVersion(m), "42");
  MutableObjectMeta(&m)->mutable_labels()->insert({"app", "web"});
  EXPECT_EQ(Label(d.metadata(), "app"), "web");
  EXPECT_EQ(Label(d.metadata(), "nope"), "");
  EXPECT_EQ(NamespacedName(d.metadata()), "default/web");

  coordinationv1::Lease lease;
  EXPECT_NE(MutableObjectMeta(&lease), nullptr);
  corev1::Node node;
  node.mutable_metadata()->set_name("n1");
  EXPECT_EQ(NamespacedName(node.metadata()), "n1");
}

TEST(Meta, NonObjectsHaveNoObjectMeta) {
  EXPECT_EQ(GetObjectMeta(corev1::PodList()), nullptr);
  EXPECT_EQ(GetObjectMeta(metav1::Status()), nullptr);
  EXPECT_EQ(GetObjectMeta(metav1::WatchEvent()), nullptr);
  EXPECT_EQ(GetObjectMeta(corev1::PodSpec()), nullptr);
  EXPECT_FALSE(HasObjectMeta(corev1::Container::descriptor()));
  EXPECT_TRUE(HasObjectMeta(corev1::Binding::descriptor()));
}

TEST(Meta, Lists) {
  corev1::PodList list;
  google::protobuf::Message& m = list;
  EXPECT_TRUE(IsList(corev1::PodList::descriptor()));
  EXPECT_FALSE(IsList(corev1::Pod::descriptor()));
  EXPECT_FALSE(IsList(metav1::Status::descriptor()));  // ListMeta, no items
  EXPECT_EQ(ListItemType(corev1::PodList::descriptor()),
            corev1::Pod::descriptor());
  MutableListMeta(&m)->set_resourceversion("9");
  EXPECT_EQ(list.metadata().resourceversion(), "9");
  EXPECT_EQ(GetListMeta(m)->resourceversion(), "9");
  google::protobuf::Message* item = AddListItem(&m);
  MutableObjectMeta(item)->set_name("a");
  AddListItem(&m);
  EXPECT_EQ(ListSize(m), 2);
  EXPECT_EQ(Name(ListItem(m, 0)), "a");
  MutableObjectMeta(MutableListItem(&m, 1))->set_name("b");
  EXPECT_EQ(list.items(1).metadata().name(), "b");
  EXPECT_EQ(ListSize(corev1::Pod()), 0);
  EXPECT_EQ(GetListMeta(corev1::Pod()), nullptr);
}

TEST(Meta, DeletionOwnersFinalizers) {
  metav1::ObjectMeta meta;
  EXPECT_FALSE(IsBeingDeleted(meta));
  meta.mutable_deletiontimestamp();  // present but the zero time
  EXPECT_FALSE(IsBeingDeleted(meta));
  SetTime(meta.mutable_deletiontimestamp(), 1795941462);
  EXPECT_TRUE(IsBeingDeleted(meta));

  EXPECT_EQ(ControllerRef(meta), nullptr);
  auto* owner = meta.add_ownerreferences();
  owner->set_name("not-controller");
  auto* ctrl = meta.add_ownerreferences();
  ctrl->set_name("rs");
  ctrl->set_controller(true);
  ASSERT_NE(ControllerRef(meta), nullptr);
  EXPECT_EQ(ControllerRef(meta)->name(), "rs");

  EXPECT_TRUE(AddFinalizer(&meta, "a"));
  EXPECT_FALSE(AddFinalizer(&meta, "a"));
  EXPECT_TRUE(AddFinalizer(&meta, "b"));
  EXPECT_TRUE(HasFinalizer(meta, "b"));
  EXPECT_TRUE(RemoveFinalizer(&meta, "a"));
  EXPECT_FALSE(RemoveFinalizer(&meta, "a"));
  EXPECT_THAT(meta.finalizers(), ElementsAre("b"));
  (*meta.mutable_annotations())["k"] = "v";
  EXPECT_EQ(Annotation(meta, "k"), "v");
}

}  // namespace
}  // namespace kplane::objects
