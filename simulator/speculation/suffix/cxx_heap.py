"""A max-heap that pops equal keys in the order GNU libstdc++'s `std::priority_queue` does.

SGLang's PROB draft tree (simulator.speculation.suffix.sglang_ngram) pops a `std::priority_queue` whose comparator
looks at the probability only, so which of two equally probable candidates comes out first -- and which one a spent
budget leaves out -- is decided by the heap algorithm, not by the comparator. That algorithm is libstdc++'s
`std::push_heap` / `std::pop_heap` (bits/stl_heap.h: `__push_heap` moves a new element up while its parent compares
less; `__pop_heap` moves the last element into the root's hole via `__adjust_heap`, which walks the hole down to a
leaf taking the right child unless it compares less than the left, then pushes the moved element up), restated here.
Named assumption: SGLang's JIT kernels are built by g++ against libstdc++ (libc++ orders equal keys differently).
"""
from __future__ import annotations


class CxxMaxHeap:
    """`std::priority_queue<T, std::vector<T>, Less>` with `less(a, b)` = key(a) < key(b)."""

    def __init__(self, key):
        self.key, self.items = key, []

    def __len__(self) -> int:
        return len(self.items)

    def _less(self, a, b) -> bool:
        return self.key(a) < self.key(b)

    def _push_up(self, hole: int, top: int, value) -> None:
        items = self.items
        parent = (hole - 1) // 2
        while hole > top and self._less(items[parent], value):
            items[hole] = items[parent]
            hole = parent
            parent = (hole - 1) // 2
        items[hole] = value

    def push(self, value) -> None:
        self.items.append(value)
        self._push_up(len(self.items) - 1, 0, value)

    def top(self):
        return self.items[0]

    def pop(self):
        items = self.items
        first = items[0]
        if len(items) > 1:
            value = items[-1]
            items[-1] = first
            length, hole = len(items) - 1, 0            # __adjust_heap over [0, length)
            child = 0
            while child < (length - 1) // 2:
                child = 2 * (child + 1)
                if self._less(items[child], items[child - 1]):
                    child -= 1
                items[hole] = items[child]
                hole = child
            if length % 2 == 0 and child == (length - 2) // 2:
                child = 2 * (child + 1)
                items[hole] = items[child - 1]
                hole = child - 1
            self._push_up(hole, 0, value)
        items.pop()
        return first
