"""Brute-force reference of suffix decoding for the tests: no tree at all.

It keeps the log of every append and removal, in order. The count of a string w is found by scanning
every sequence for occurrences of w; the order of w's continuations is found by replaying, in log order,
each event that added or removed an occurrence of w followed by a token (the engine's sibling-order rule,
simulator.speculation.suffix.tree module docstring); speculation scans every match length and follows the
first continuation of the replayed order, with float32 probabilities. Slow (O(text) per count) and
independent of the tree's data structure.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32


class BruteSuffix:
    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.seqs: dict = {}
        self.log: list = []     # ("add", seq, pos, token) / ("remove", tokens, seq)

    def append(self, seq_id, tok) -> None:
        self.seqs.setdefault(seq_id, []).append(int(tok))
        self.log.append(("add", seq_id, len(self.seqs[seq_id]) - 1, int(tok)))

    def extend(self, seq_id, tokens) -> None:
        for t in tokens:
            self.append(seq_id, t)

    def remove(self, seq_id) -> None:
        self.log.append(("remove", list(self.seqs.pop(seq_id)), seq_id))

    def count(self, w) -> int:
        w, n = list(w), len(w)
        if n == 0 or n > self.max_depth:
            return 0
        return sum(1 for seq in self.seqs.values() for s in range(len(seq) - n + 1) if seq[s:s + n] == w)

    def order(self, w) -> list:
        """w's continuations (tokens) in the engine's order, replayed from the log."""
        w, d = list(w), len(w)
        if d + 1 > self.max_depth:
            return []
        counts, order = {}, []
        snapshot: dict = {}
        for event in self.log:
            if event[0] == "add":
                _, seq_id, p, tok = event
                seq = snapshot.setdefault(seq_id, [])
                seq.append(tok)
                if p >= d and seq[p - d:p] == w:
                    self._inc(counts, order, seq[p])
            else:
                _, tokens, seq_id = event
                snapshot.pop(seq_id, None)
                for s in range(len(tokens) - d):
                    if tokens[s:s + d] == w:
                        self._dec(counts, order, tokens[s + d])
        return order

    @staticmethod
    def _inc(counts, order, t) -> None:
        if t not in counts:
            counts[t] = 1
            order.append(t)
            return
        i, old = order.index(t), counts[t]
        counts[t] = old + 1
        if i == 0 or counts[order[i - 1]] > old + 1:
            return
        head = counts[order[i - 1]]
        j = i - 1
        while j > 0 and counts[order[j - 1]] == head:
            j -= 1
        order.insert(j, order.pop(i))

    @staticmethod
    def _dec(counts, order, t) -> None:
        old = counts[t]
        i = order.index(t)
        if old == 1:
            del counts[t]
            order.pop(i)
            return
        counts[t] = old - 1
        if i + 1 >= len(order) or counts[order[i + 1]] != old:
            return
        order.pop(i)
        j = i
        while j < len(order) and counts[order[j]] >= old:
            j += 1
        order.insert(j, t)

    def speculate(self, context, max_spec_tokens, factor=1.0, offset=0.0, min_prob=0.1):
        context = [int(t) for t in context]
        best = ((), (), F32(0.0), 0)
        for m in range(1, len(context)):
            w = context[len(context) - m:]
            if self.count(w) == 0:
                break
            cap = max(0, min(max_spec_tokens, int(float(F32(F32(m) * F32(factor)) + F32(offset)) + 1e-6)))
            tokens, probs, prob, score, u = [], [], F32(1.0), F32(0.0), list(w)
            while len(tokens) < cap:
                nxt = self.order(u)
                if not nxt:
                    break
                c = nxt[0]
                prob = F32(prob * F32(F32(self.count(u + [c])) / F32(self.count(u))))
                if prob < F32(min_prob):
                    break
                tokens.append(c)
                probs.append(float(prob))
                score = F32(score + prob)
                u = u + [c]
            if score >= best[2]:
                best = (tuple(tokens), tuple(probs), score, m)
        return best[0], best[1], float(best[2]), best[3]
