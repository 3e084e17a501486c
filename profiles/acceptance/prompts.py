"""Prompt set of the acceptance measurement.

Code prompts come from the Python standard library of the machine that runs the measurement: for a
function or method that has a docstring and a body of at least `MIN_BODY_LINES` lines, the prompt is its
`def` line(s) plus the docstring, dedented, ending with a newline — the model is asked to write the body.
The real body is kept as `reference_completion` (used only to calibrate the layer-skip drafter, never as
the generated text). Files are shuffled with a seeded generator and each file gives at most one prompt;
calibration prompts and measured prompts come from disjoint files ("held out by file"). Excluded: tests,
site-packages, IDLE/turtledemo/lib2to3/ensurepip/pydoc_data, and functions whose prompt is shorter than
`MIN_PROMPT_CHARS` or longer than `MAX_PROMPT_CHARS`.

Natural-language prompts are the hand-written requests in `TEXT_REQUESTS`, wrapped in the ChatML format
of the Qwen2 instruct models (`models.torch_impl.tokenizer.chatml_prompt`).

The set depends on the stdlib version; every measured prompt's text is stored with the traces.
"""
from __future__ import annotations

import ast
import os
import sysconfig
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.torch_impl.tokenizer import chatml_prompt

MIN_BODY_LINES = 4
MIN_PROMPT_CHARS = 80
MAX_PROMPT_CHARS = 1200
_EXCLUDED_DIRS = {"test", "tests", "site-packages", "dist-packages", "idlelib", "turtledemo", "lib2to3",
                  "ensurepip", "pydoc_data", "__pycache__", "config-3", "tkinter"}

TEXT_REQUESTS = (
    "Explain the difference between a list and a tuple in Python, with a short example of each.",
    "Write a short paragraph describing how a hash table handles collisions.",
    "What are the main causes of the seasons on Earth? Answer in a few sentences.",
    "Give me three tips for writing readable code, each with one sentence of explanation.",
    "Summarize what the TCP three-way handshake does and why it is needed.",
    "Write a polite email declining a meeting invitation because of a schedule conflict.",
    "Explain recursion to a beginner programmer using a real-world analogy.",
    "What is the difference between a process and a thread?",
    "Describe how binary search works and state its time complexity.",
    "List the steps to make a cup of tea, numbered.",
    "Explain what a SQL JOIN is and name the common kinds of joins.",
    "Why is floating-point arithmetic sometimes inexact? Give an example.",
    "Write a haiku about debugging code late at night.",
    "Compare depth-first search and breadth-first search in a few sentences.",
    "What does the Python Global Interpreter Lock do, and what are its consequences?",
    "Explain the idea of gradient descent in plain language.",
)


@dataclass(frozen=True)
class Prompt:
    prompt_id: str
    kind: str                 # "code" | "text"
    split: str                # "measure" | "calibration"
    source: str               # stdlib-relative path of the file, or "handwritten"
    text: str                 # exactly what is tokenized
    reference_completion: str = ""


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def candidate_files(root: Path) -> list[Path]:
    """Sorted stdlib .py files outside the excluded folders."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _EXCLUDED_DIRS and not d.startswith("config-"))
        found.extend(Path(dirpath) / f for f in filenames
                     if f.endswith(".py") and not f.startswith("test_"))
    return sorted(found)


def functions_with_docstrings(source: str) -> list[tuple[str, str, str]]:
    """(qualified name, prompt, body) for each eligible function in `source` (in file order)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines(keepends=True)
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = child.body[0] if child.body else None
                if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                        and isinstance(doc.value.value, str)) or len(child.body) < 2:
                    continue
                body_first, body_last = child.body[1].lineno, child.body[-1].end_lineno
                if body_last - body_first + 1 < MIN_BODY_LINES:
                    continue
                prompt = textwrap.dedent("".join(lines[child.lineno - 1:doc.end_lineno]))
                indent = len(lines[child.lineno - 1]) - len(lines[child.lineno - 1].lstrip())
                body = "".join(line[indent:] if line[:indent].isspace() else line
                               for line in lines[doc.end_lineno:body_last])
                if MIN_PROMPT_CHARS <= len(prompt) <= MAX_PROMPT_CHARS and prompt.isascii():
                    out.append((f"{prefix}{child.name}", prompt if prompt.endswith("\n") else prompt + "\n",
                                body))

    visit(tree, "")
    return out


def code_prompts(n_measure: int, n_calibration: int, seed: int, root: Path | None = None) -> list[Prompt]:
    """`n_calibration` then `n_measure` code prompts from distinct, seeded-shuffled stdlib files."""
    if n_measure < 0 or n_calibration < 0:
        raise ValueError(f"prompt counts must be >= 0, got n_measure={n_measure}, n_calibration={n_calibration}")
    root = Path(root) if root is not None else stdlib_dir()
    files = candidate_files(root)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(files))
    prompts: list[Prompt] = []
    for index in order:
        if len(prompts) == n_measure + n_calibration:
            break
        path = files[index]
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        funcs = functions_with_docstrings(source)
        if not funcs:
            continue
        name, prompt, body = funcs[int(rng.integers(len(funcs)))]
        rel = path.relative_to(root).as_posix()
        split = "calibration" if len(prompts) < n_calibration else "measure"
        prompts.append(Prompt(f"code:{rel}:{name}", "code", split, rel, prompt, body))
    if len(prompts) < n_measure + n_calibration:
        raise ValueError(f"only {len(prompts)} stdlib files under {root} give prompts, "
                         f"asked for {n_measure + n_calibration}")
    return prompts


def text_prompts(n: int) -> list[Prompt]:
    if not 0 <= n <= len(TEXT_REQUESTS):
        raise ValueError(f"n_text must lie in 0…{len(TEXT_REQUESTS)}, got {n}")
    return [Prompt(f"text:{i:02d}", "text", "measure", "handwritten", chatml_prompt(TEXT_REQUESTS[i]))
            for i in range(n)]


def build_prompt_set(n_code: int, n_text: int, n_calibration: int, seed: int,
                     root: Path | None = None) -> list[Prompt]:
    """Calibration prompts first, then the measured code prompts, then the natural-language ones."""
    return code_prompts(n_code, n_calibration, seed, root) + text_prompts(n_text)
