#include "base/testing/fault_injection_file_system.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

namespace kplane {
namespace {

// One spelling per path, so that "d//x" and "d/x/" are the same name.
std::string Normalize(const std::string& path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

uint64_t NextRandom(uint64_t* state) {  // splitmix64
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kSector = 512;

}  // namespace

// A WritableFile that reports its syncs (and truncations) to the double.
class FaultInjectionFileSystem::File : public WritableFile {
 public:
  File(FaultInjectionFileSystem* fs, std::string path,
       std::shared_ptr<Node> node, std::unique_ptr<WritableFile> target)
      : fs_(fs),
        path_(std::move(path)),
        node_(std::move(node)),
        target_(std::move(target)) {}
  ~File() override { (void)Close(); }

  Status Append(std::string_view data) override {
    RETURN_IF_ERROR(fs_->CheckFault(Op::kWrite, path_));
    RETURN_IF_ERROR(target_->Append(data));
    fs_->WrittenUpTo(node_, target_->Size());
    return Status::Ok();
  }
  Status Flush() override { return target_->Flush(); }
  Status Sync() override { return DoSync(/*full=*/false); }
  Status Fsync() override { return DoSync(/*full=*/true); }
  Status Truncate(uint64_t size) override {
    RETURN_IF_ERROR(fs_->CheckFault(Op::kWrite, path_));
    RETURN_IF_ERROR(target_->Truncate(size));
    MutexLock lock(&fs_->mu_);
    // The cut is not durable yet, but the bytes past it are gone for good.
    node_->synced = std::min(node_->synced, size);
    node_->written = std::min(node_->written, size);
    return Status::Ok();
  }
  Status Preallocate(uint64_t size) override {
    RETURN_IF_ERROR(fs_->CheckFault(Op::kWrite, path_));
    return target_->Preallocate(size);
  }
  Status Close() override {
    if (closed_) return Status::Ok();
    closed_ = true;
    Status s = target_->Close();
    fs_->FileClosed();
    return s;
  }
  uint64_t Size() const override { return target_->Size(); }

 private:
  Status DoSync(bool full) {
    RETURN_IF_ERROR(fs_->CheckFault(Op::kSync, path_));
    // Appends that finished before the sync started are covered by it.
    const uint64_t covered = target_->Size();
    RETURN_IF_ERROR(full ? target_->Fsync() : target_->Sync());
    fs_->SyncedUpTo(node_, covered);
    return Status::Ok();
  }

  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  const std::shared_ptr<Node> node_;
  const std::unique_ptr<WritableFile> target_;
  bool closed_ = false;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base,
                                                   std::string scratch_dir)
    : base_(base) {
  MutexLock lock(&mu_);
  scratch_dir_ = std::move(scratch_dir);
}

FaultInjectionFileSystem::~FaultInjectionFileSystem() {
  MutexLock lock(&mu_);
  for (const JournalEntry& e : journal_) {
    if (e.saved) DropSavedLocked(*e.saved);
  }
  if (own_scratch_dir_) (void)RemoveAllLocked(scratch_dir_);
}

// ---- bookkeeping
// -------------------------------------------------------------

std::shared_ptr<FaultInjectionFileSystem::Node>
FaultInjectionFileSystem::NodeLocked(const std::string& path) {
  auto it = nodes_.find(path);
  if (it != nodes_.end()) return it->second;
  // Never written through us: durable as it is.
  auto node = std::make_shared<Node>();
  node->synced = base_->FileSize(path).value_or(0);
  node->written = node->synced;
  nodes_[path] = node;
  return node;
}

Status FaultInjectionFileSystem::CheckFault(Op op, const std::string& path) {
  MutexLock lock(&mu_);
  const char* what = op == Op::kWrite ? "write " : "sync ";
  if (op == Op::kWrite && no_space_) {
    ++injected_failures_;
    return ErrnoToStatus(what + path + " (injected)", ENOSPC);
  }
  for (auto it = errors_.begin(); it != errors_.end(); ++it) {
    if (it->op != op || path.find(it->path_contains) == std::string::npos) {
      continue;
    }
    if (it->skip > 0) {
      --it->skip;
      return Status::Ok();
    }
    ++injected_failures_;
    const int err = it->error;
    if (it->once) errors_.erase(it);
    return ErrnoToStatus(what + path + " (injected)", err);
  }
  return Status::Ok();
}

void FaultInjectionFileSystem::SyncedUpTo(const std::shared_ptr<Node>& node,
                                          uint64_t size) {
  MutexLock lock(&mu_);
  if (!active_) return;
  node->synced = size;
  node->written = std::max(node->written, size);
}

void FaultInjectionFileSystem::WrittenUpTo(const std::shared_ptr<Node>& node,
                                           uint64_t size) {
  MutexLock lock(&mu_);
  // A dead machine's writes never reach the disk: they are no part of any
  // torn tail.
  if (active_) node->written = size;
}

void FaultInjectionFileSystem::FileClosed() {
  MutexLock lock(&mu_);
  --open_files_;
}

StatusOr<std::string> FaultInjectionFileSystem::ScratchDirLocked() {
  if (scratch_dir_.empty()) {
    char tmpl[] = "/tmp/kplane-fault-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return ErrnoToStatus("mkdtemp", errno);
    scratch_dir_ = tmpl;
    own_scratch_dir_ = true;
  }
  return scratch_dir_;
}

StatusOr<FaultInjectionFileSystem::Saved> FaultInjectionFileSystem::SaveLocked(
    const std::string& path) {
  Saved saved;
  saved.node = NodeLocked(path);
  ASSIGN_OR_RETURN(std::string scratch, ScratchDirLocked());
  const std::string link = scratch + "/" + std::to_string(++scratch_seq_);
  // A second name keeps the inode (and whatever an open handle still
  // writes to it) without copying it.
  if (base_->Link(path, link).ok()) {
    saved.scratch_path = link;
    return saved;
  }
  ASSIGN_OR_RETURN(saved.content,
                   ReadFileRange(base_, path, 0, saved.node->synced));
  return saved;
}

Status FaultInjectionFileSystem::RestoreLocked(const Saved& saved,
                                               const std::string& path) {
  if (!saved.scratch_path.empty()) {
    RETURN_IF_ERROR(base_->Rename(saved.scratch_path, path));
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                     base_->OpenWritable(path, OpenMode::kAppend));
    if (f->Size() > saved.node->synced) {
      RETURN_IF_ERROR(f->Truncate(saved.node->synced));
    }
    RETURN_IF_ERROR(f->Close());
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                     base_->OpenWritable(path, OpenMode::kTruncate));
    RETURN_IF_ERROR(f->Append(*saved.content));
    RETURN_IF_ERROR(f->Close());
  }
  nodes_[path] = saved.node;
  return Status::Ok();
}

void FaultInjectionFileSystem::DropSavedLocked(const Saved& saved) {
  if (!saved.scratch_path.empty()) (void)base_->Remove(saved.scratch_path);
}

void FaultInjectionFileSystem::RecordLocked(JournalEntry entry) {
  journal_.push_back(std::move(entry));
}

void FaultInjectionFileSystem::MoveNamesLocked(const std::string& from,
                                               const std::string& to,
                                               bool is_dir) {
  auto moved = [&](const std::string& p) -> std::optional<std::string> {
    if (p == from || IsUnder(p, from)) return to + p.substr(from.size());
    return std::nullopt;
  };
  std::map<std::string, std::shared_ptr<Node>> nodes;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    std::optional<std::string> p = moved(it->first);
    if (!p) {
      ++it;
      continue;
    }
    nodes[*p] = it->second;
    it = nodes_.erase(it);
  }
  for (auto& [p, n] : nodes) nodes_[p] = n;
  if (!is_dir) return;
  // The pending changes inside a directory belong to it, not to its name:
  // they move with it, and only a sync of the directory (under whatever
  // name it has then) makes them durable. A change of the directory's own
  // name (its creation, an earlier rename to it) stays in its parent.
  for (JournalEntry& e : journal_) {
    if (IsUnder(e.path, from)) e.path = *moved(e.path);
    if (IsUnder(e.from, from)) e.from = *moved(e.from);
    std::set<std::string> dirs;
    for (const std::string& d : e.pending_dirs) {
      dirs.insert(moved(d).value_or(d));
    }
    e.pending_dirs = std::move(dirs);
  }
}

void FaultInjectionFileSystem::ForgetNodesUnderLocked(const std::string& dir) {
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    it = IsUnder(it->first, dir) ? nodes_.erase(it) : std::next(it);
  }
}

Status FaultInjectionFileSystem::RemoveAllLocked(const std::string& path) {
  StatusOr<std::vector<std::string>> children = base_->ListDir(path);
  if (!children.ok()) return base_->Remove(path);
  for (const std::string& c : *children) {
    RETURN_IF_ERROR(RemoveAllLocked(path + "/" + c));
  }
  return base_->RemoveDir(path);
}

// ---- power
// -------------------------------------------------------------------

Status FaultInjectionFileSystem::CutFileLocked(const std::string& path,
                                               const Node& node,
                                               const PowerCutOptions& options,
                                               uint64_t* rng) {
  const uint64_t synced = node.synced;
  ASSIGN_OR_RETURN(uint64_t size, base_->FileSize(path));
  if (size <= synced) return Status::Ok();
  uint64_t keep = 0;
  bool zero_last_sector = false;
  // Only what was written while the power was on can have reached the disk.
  const uint64_t written = std::clamp(node.written, synced, size);
  if (options.torn_tails) {
    keep = NextRandom(rng) % (written - synced + 1);
    zero_last_sector = (NextRandom(rng) & 1) != 0;
  }
  const uint64_t new_size = synced + keep;
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                   base_->OpenWritable(path, OpenMode::kAppend));
  RETURN_IF_ERROR(f->Truncate(new_size));
  if (zero_last_sector && keep > 0) {
    // The synced bytes of that sector stay: they were durable.
    const uint64_t from = std::max(synced, (new_size - 1) / kSector * kSector);
    RETURN_IF_ERROR(f->Truncate(from));
    RETURN_IF_ERROR(f->Append(std::string(new_size - from, '\0')));
  }
  return f->Close();
}

Status FaultInjectionFileSystem::UndoLocked(const JournalEntry& e) {
  using Kind = JournalEntry::Kind;
  switch (e.kind) {
    case Kind::kCreateFile:
    case Kind::kLink:
      nodes_.erase(e.path);
      if (!base_->Exists(e.path)) return Status::Ok();
      return base_->Remove(e.path);
    case Kind::kCreateDir:
      ForgetNodesUnderLocked(e.path);
      if (!base_->Exists(e.path)) return Status::Ok();
      return RemoveAllLocked(e.path);
    case Kind::kRemoveDir:
      return base_->CreateDir(e.path, kPrivateDirMode);
    case Kind::kRename: {
      if (base_->Exists(e.path)) {
        // Copies: moving a directory back rewrites the journal, `e` too.
        const std::string to = e.path, from = e.from;
        const bool is_dir = base_->ListDir(to).ok();
        RETURN_IF_ERROR(base_->Rename(to, from));
        MoveNamesLocked(to, from, is_dir);
      }
      if (e.saved) return RestoreLocked(*e.saved, e.path);
      return Status::Ok();
    }
    case Kind::kRemove:
      return RestoreLocked(*e.saved, e.path);
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::PowerCut(const PowerCutOptions& options) {
  MutexLock lock(&mu_);
  if (open_files_ > 0) {
    return FailedPreconditionError(
        "power cut with " + std::to_string(open_files_) +
        " file(s) still open through the fault-injecting file system");
  }
  Status first;
  uint64_t rng = options.seed;
  // Contents first, under the names they have now; the journal then moves
  // them back to the names they had.
  for (const auto& [path, node] : nodes_) {
    if (!base_->Exists(path)) continue;
    Status s = CutFileLocked(path, *node, options, &rng);
    if (first.ok()) first = s;
  }
  for (auto it = journal_.rbegin(); it != journal_.rend(); ++it) {
    Status s = UndoLocked(*it);
    if (first.ok() && !s.ok()) {
      first = s.Annotate("power cut: undoing a change of " + it->path);
    }
  }
  journal_.clear();
  nodes_.clear();
  active_ = true;
  return first;
}

void FaultInjectionFileSystem::SetActive(bool active) {
  MutexLock lock(&mu_);
  active_ = active;
}

bool FaultInjectionFileSystem::active() const {
  MutexLock lock(&mu_);
  return active_;
}

// ---- errors and damage
// ---------------------------------------------------------

void FaultInjectionFileSystem::InjectError(const ErrorSpec& spec) {
  MutexLock lock(&mu_);
  errors_.push_back(spec);
}

void FaultInjectionFileSystem::ClearErrors() {
  MutexLock lock(&mu_);
  errors_.clear();
  no_space_ = false;
}

void FaultInjectionFileSystem::SetNoSpace(bool no_space) {
  MutexLock lock(&mu_);
  no_space_ = no_space;
}

int64_t FaultInjectionFileSystem::injected_failures() const {
  MutexLock lock(&mu_);
  return injected_failures_;
}

Status FaultInjectionFileSystem::FlipBits(const std::string& path,
                                          uint64_t offset,
                                          std::string_view mask) {
  const std::string p = Normalize(path);
  ASSIGN_OR_RETURN(std::string data, ReadFile(base_, p));
  if (offset + mask.size() > data.size()) {
    return OutOfRangeError("flip past the end of " + p);
  }
  for (size_t i = 0; i < mask.size(); ++i) data[offset + i] ^= mask[i];
  // Rewrite the tail in place (same inode), as the disk would return it.
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                   base_->OpenWritable(p, OpenMode::kAppend));
  RETURN_IF_ERROR(f->Truncate(offset));
  RETURN_IF_ERROR(f->Append(std::string_view(data).substr(offset)));
  return f->Close();
}

std::set<std::string> FaultInjectionFileSystem::WrittenPaths() const {
  MutexLock lock(&mu_);
  return written_paths_;
}

std::vector<std::string> FaultInjectionFileSystem::UnsyncedNames() const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const JournalEntry& e : journal_) out.push_back(e.path);
  return out;
}

// ---- FileSystem
// ------------------------------------------------------------------

StatusOr<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::OpenWritable(
    const std::string& path, OpenMode mode) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  const bool existed = base_->Exists(p);
  std::shared_ptr<Node> node;
  if (existed) node = NodeLocked(p);  // before a kTruncate empties it
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> target,
                   base_->OpenWritable(p, mode));
  if (!existed) {
    node = std::make_shared<Node>();
    nodes_[p] = node;
    RecordLocked(
        {JournalEntry::Kind::kCreateFile, p, "", std::nullopt, {DirName(p)}});
  } else if (mode == OpenMode::kTruncate) {
    node->synced = 0;
    node->written = 0;
  }
  ++open_files_;
  written_paths_.insert(p);
  return std::unique_ptr<WritableFile>(
      new File(this, p, std::move(node), std::move(target)));
}

StatusOr<std::unique_ptr<ReadableFile>> FaultInjectionFileSystem::OpenReadable(
    const std::string& path) {
  return base_->OpenReadable(path);
}

Status FaultInjectionFileSystem::Rename(const std::string& from,
                                        const std::string& to) {
  const std::string f = Normalize(from), t = Normalize(to);
  MutexLock lock(&mu_);
  const bool is_dir = base_->ListDir(f).ok();
  std::optional<Saved> saved;
  if (!is_dir && f != t) {
    NodeLocked(f);
    if (base_->Exists(t)) {
      ASSIGN_OR_RETURN(saved, SaveLocked(t));
    }
  }
  Status s = base_->Rename(f, t);
  if (!s.ok()) {
    if (saved) DropSavedLocked(*saved);
    return s;
  }
  if (f == t) return Status::Ok();
  // What the rename replaced is gone from the namespace.
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    const bool replaced = it->first == t || IsUnder(it->first, t);
    it = replaced ? nodes_.erase(it) : std::next(it);
  }
  MoveNamesLocked(f, t, is_dir);
  RecordLocked({JournalEntry::Kind::kRename,
                t,
                f,
                std::move(saved),
                {DirName(f), DirName(t)}});
  return Status::Ok();
}

Status FaultInjectionFileSystem::Link(const std::string& from,
                                      const std::string& to) {
  const std::string f = Normalize(from), t = Normalize(to);
  MutexLock lock(&mu_);
  std::shared_ptr<Node> node = NodeLocked(f);
  RETURN_IF_ERROR(base_->Link(f, t));
  nodes_[t] = node;
  RecordLocked({JournalEntry::Kind::kLink, t, f, std::nullopt, {DirName(t)}});
  return Status::Ok();
}

Status FaultInjectionFileSystem::Remove(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  if (!base_->Exists(p)) return base_->Remove(p);  // the base's NotFound
  ASSIGN_OR_RETURN(Saved saved, SaveLocked(p));
  Status s = base_->Remove(p);
  if (!s.ok()) {
    DropSavedLocked(saved);
    return s;
  }
  nodes_.erase(p);
  RecordLocked(
      {JournalEntry::Kind::kRemove, p, "", std::move(saved), {DirName(p)}});
  return Status::Ok();
}

Status FaultInjectionFileSystem::CreateDir(const std::string& path,
                                           uint32_t mode) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(base_->CreateDir(p, mode));
  RecordLocked(
      {JournalEntry::Kind::kCreateDir, p, "", std::nullopt, {DirName(p)}});
  return Status::Ok();
}

Status FaultInjectionFileSystem::RemoveDir(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(base_->RemoveDir(p));
  RecordLocked(
      {JournalEntry::Kind::kRemoveDir, p, "", std::nullopt, {DirName(p)}});
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& path) {
  const std::string p = Normalize(path);
  RETURN_IF_ERROR(CheckFault(Op::kSync, p));
  RETURN_IF_ERROR(base_->SyncDir(p));
  MutexLock lock(&mu_);
  if (!active_) return Status::Ok();
  std::vector<std::string> removed_dirs;
  for (auto it = journal_.begin(); it != journal_.end();) {
    it->pending_dirs.erase(p);
    if (!it->pending_dirs.empty()) {
      ++it;
      continue;
    }
    if (it->kind == JournalEntry::Kind::kRemoveDir) {
      removed_dirs.push_back(it->path);
    }
    // Durable: never undone, so what it replaced is gone for good.
    if (it->saved) DropSavedLocked(*it->saved);
    it = journal_.erase(it);
  }
  // A directory whose removal is durable took its entries with it: the
  // changes inside it (the removals that emptied it) can no longer be
  // undone, whether or not the directory itself was synced before it went.
  for (const std::string& dir : removed_dirs) {
    for (auto it = journal_.begin(); it != journal_.end();) {
      if (!IsUnder(it->path, dir)) {
        ++it;
        continue;
      }
      if (it->saved) DropSavedLocked(*it->saved);
      it = journal_.erase(it);
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> FaultInjectionFileSystem::ListDir(
    const std::string& path) {
  return base_->ListDir(path);
}

StatusOr<uint64_t> FaultInjectionFileSystem::FileSize(const std::string& path) {
  return base_->FileSize(path);
}

bool FaultInjectionFileSystem::Exists(const std::string& path) {
  return base_->Exists(path);
}

StatusOr<std::unique_ptr<FileLock>> FaultInjectionFileSystem::LockFile(
    const std::string& path) {
  return base_->LockFile(path);
}

}  // namespace kplane
