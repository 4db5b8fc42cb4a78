"""The phone's in-memory file system: directories and regular files with modes and mtimes.

Paths are absolute POSIX paths. A path with a `..` segment is refused (PathRefused), which
is stricter than Android and keeps every sync/shell operation inside the tree.
"""

from __future__ import annotations

import stat
import time
from dataclasses import dataclass, field

DEFAULT_DIRS = (
    "/data/local/tmp", "/sdcard/Download", "/sdcard/DCIM", "/sdcard/Pictures",
    "/storage/emulated/0", "/system/bin", "/system/app", "/product/app", "/proc", "/dev",
    "/vendor", "/cache",
)


class FsError(OSError):
    """A file-system failure with the text Android would print after the path."""


class PathRefused(FsError):
    """The path is not acceptable here (relative, or with a `..` segment)."""


@dataclass
class Node:
    """A file (data is bytes) or directory (children is a dict)."""

    mode: int
    mtime: int
    data: bytearray = field(default_factory=bytearray)
    children: dict[str, "Node"] | None = None

    @property
    def is_dir(self) -> bool:
        return self.children is not None

    @property
    def size(self) -> int:
        return 4096 if self.is_dir else len(self.data)


def split_path(path: str) -> list[str]:
    """Segments of an absolute path; PathRefused for relative or `..` paths."""
    if not path.startswith("/"):
        raise PathRefused("Not an absolute path")
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts:
        raise PathRefused("Path traversal ('..') is not allowed")
    return parts


class FileSystem:
    """A tree of Nodes rooted at '/'."""

    def __init__(self) -> None:
        self.root = Node(stat.S_IFDIR | 0o755, int(time.time()), children={})
        for d in DEFAULT_DIRS:
            self.mkdir(d, parents=True)

    def lookup(self, path: str) -> Node | None:
        node = self.root
        for part in split_path(path):
            if node.children is None or part not in node.children:
                return None
            node = node.children[part]
        return node

    def _parent(self, path: str, create: bool) -> tuple[Node, str]:
        parts = split_path(path)
        if not parts:
            raise FsError("Is a directory")
        node = self.root
        for part in parts[:-1]:
            assert node.children is not None
            child = node.children.get(part)
            if child is None:
                if not create:
                    raise FsError("No such file or directory")
                child = Node(stat.S_IFDIR | 0o771, int(time.time()), children={})
                node.children[part] = child
            if not child.is_dir:
                raise FsError("Not a directory")
            node = child
        return node, parts[-1]

    def read(self, path: str) -> bytes:
        node = self.lookup(path)
        if node is None:
            raise FsError("No such file or directory")
        if node.is_dir:
            raise FsError("Is a directory")
        return bytes(node.data)

    def write(self, path: str, data: bytes, mode: int = 0o644, mtime: int | None = None,
              append: bool = False, parents: bool = False) -> None:
        parent, name = self._parent(path, create=parents)
        assert parent.children is not None
        node = parent.children.get(name)
        if node is not None and node.is_dir:
            raise FsError("Is a directory")
        now = int(time.time()) if mtime is None else mtime
        if node is None or not append:
            parent.children[name] = Node(stat.S_IFREG | (mode & 0o7777), now, bytearray(data))
        else:
            node.data += data
            node.mtime = now

    def mkdir(self, path: str, parents: bool = False) -> None:
        existing = self.lookup(path)
        if existing is not None:
            if parents and existing.is_dir:
                return
            raise FsError("File exists")
        parent, name = self._parent(path, create=parents)
        assert parent.children is not None
        parent.children[name] = Node(stat.S_IFDIR | 0o771, int(time.time()), children={})

    def remove(self, path: str, recursive: bool = False) -> None:
        parent, name = self._parent(path, create=False)
        assert parent.children is not None
        node = parent.children.get(name)
        if node is None:
            raise FsError("No such file or directory")
        if node.is_dir and not recursive:
            raise FsError("Is a directory")
        del parent.children[name]

    def listdir(self, path: str) -> list[tuple[str, Node]]:
        node = self.lookup(path)
        if node is None:
            raise FsError("No such file or directory")
        if node.children is None:
            raise FsError("Not a directory")
        return sorted(node.children.items())
