"""Train the words' end-of-turn head (companion/voice/turns/text_model/head.py) and print its curve.

The set is requests.txt beside this script: each line a complete request, each word boundary
inside it an open prefix (unless marked "|", or the prefix is itself one of the requests), each
read as written and as Whisper might write it (lower case, no punctuation). One line in five
is held out (every fifth, all of its prefixes and both readings); the L2 strength is chosen by
4-fold cross-validation over the training lines, the head is fitted on all of them, and the
curve is read on the held-out lines. Terse commands and open phrases that are in no line are
scored at the end, zero-shot and with the head. Prints one JSON object; writes the head with
--write.

    .venv/bin/python bench/text_turn_train/train.py [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from companion.voice.turns.text_model.head import HEAD_FILE, TurnHead, head_features  # noqa: E402
from companion.voice.turns.text_turn import (  # noqa: E402
    PROMPT,
    TEXT_MODEL_SHA256,
    TextTurn,
    combined,
    resolve_text_model,
    split_final_punctuation,
)

REQUESTS = Path(__file__).with_name("requests.txt")
HELD_OUT_EVERY = 5
LAMBDAS = (0.1, 1.0, 10.0, 30.0, 100.0, 300.0)
TERSE = ("Ten of clubs.", "Lights off.", "Next song.", "Yes.", "Stop.", "What time is it?", "Why is the sky blue?")
OPEN = ("Could you", "Thomas Piketty, in his book,", "Could you.", "I would like to.", "Can you find.",
        "Set the", "Remind me to", "Tell me.")


def lines() -> list[list[tuple[str, bool]]]:
    """Each request as (word, the request could end here) pairs."""
    out = []
    for raw in REQUESTS.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        words = raw.split()
        out.append([(w.rstrip("|"), w.endswith("|") or i == len(words) - 1) for i, w in enumerate(words)])
    return out


def heard(text: str) -> str:
    """As Whisper may write it: lower case, no punctuation."""
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s']", "", text.lower())).strip()


def examples(line: list[tuple[str, bool]], complete: set[str]) -> list[tuple[str, str, bool]]:
    """(full text, prefix, complete?) for every prefix in both readings."""
    out = []
    for reading in (lambda t: t, heard):
        full = reading(" ".join(w for w, _ in line))
        for i in range(1, len(line) + 1):
            prefix = reading(" ".join(w for w, _ in line[:i]))
            ends = line[i - 1][1] or heard(prefix) in complete
            out.append((full, prefix, ends))
    return out


def featurise(model: TextTurn, items: list[tuple[str, str, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels and zero-shot probabilities: one forward pass per full text, read at each prefix's last word."""
    llama, prompt = model._model, model._prompt
    ends = [model._end_of_message, *model._ends]
    cache = llama.new_cache(len(prompt) + 96)
    llama.forward(prompt, cache)
    rows, labels, zero = [], [], []
    hidden_of: dict[str, tuple[list[int], np.ndarray]] = {}
    for full, prefix, label in items:
        if full not in hidden_of:
            ids = model.tokens(split_final_punctuation(full)[0])
            cache.keep(len(prompt))
            hidden_of[full] = (ids, llama.hidden(ids, cache, last=len(ids)))
        ids, hidden = hidden_of[full]
        bare = model.tokens(split_final_punctuation(prefix)[0])
        if bare != ids[:len(bare)]:  # a word the tokenizer splits differently alone: read it on its own
            cache.keep(len(prompt))
            state = llama.hidden(bare, cache)[-1]
        else:
            state = hidden[len(bare) - 1]
        at_word = float(np.log(np.exp(llama.log_probabilities(state[None])[0, ends]).sum()))
        rows.append(head_features(state, at_word))
        labels.append(label)
        zero.append(np.exp(at_word))
    return np.array(rows), np.array(labels, dtype=float), np.array(zero)


def fit(x: np.ndarray, y: np.ndarray, lam: float) -> TurnHead:
    """L2-regularised logistic regression by Newton's method, the classes weighted equally."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], lam)
    penalty[-1] = 0.0
    for _ in range(30):
        p = 1 / (1 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (weight * (p - y)) + penalty * w
        hess = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return TurnHead(mean, scale, w[:-1], float(w[-1]), TEXT_MODEL_SHA256)


def loss(head: TurnHead, x: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(head.probability(x), 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """The chance a complete example scores above an open one."""
    pos, neg = p[y == 1], p[y == 0]
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def curve(p: np.ndarray, y: np.ndarray) -> list[dict]:
    """Per threshold: the share of complete requests taken at once, and of open prefixes taken as complete."""
    return [{"threshold": t, "complete_at_or_above": round(float((p[y == 1] >= t).mean()), 3),
             "open_at_or_above": round(float((p[y == 0] >= t).mean()), 3)}
            for t in (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the head to {HEAD_FILE.name}")
    args = parser.parse_args()
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    model = TextTurn(resolve_text_model())
    model.load()
    every = lines()
    complete = {heard(" ".join(w for w, _ in line[:i + 1])) for line in every for i, (_, e) in enumerate(line) if e}
    train_lines = [line for i, line in enumerate(every) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1]
    test_lines = [line for i, line in enumerate(every) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]
    per_line = [featurise(model, examples(line, complete)) for line in train_lines]
    x_test, y_test, zero_test = featurise(model, [e for line in test_lines for e in examples(line, complete)])
    x, y = np.vstack([f[0] for f in per_line]), np.concatenate([f[1] for f in per_line])
    fold = np.concatenate([np.full(len(f[1]), i % 4) for i, f in enumerate(per_line)])
    cv = {lam: float(np.mean([loss(fit(x[fold != k], y[fold != k], lam), x[fold == k], y[fold == k])
                              for k in range(4)])) for lam in LAMBDAS}
    lam = min(cv, key=cv.get)
    head = fit(x, y, lam)
    p_test = head.probability(x_test)
    read_test = np.array([combined(z, h) for z, h in zip(zero_test, p_test, strict=True)])

    def score(words: str) -> dict:
        guess = model.probability_sync(words)
        state, at_word = model.last_word_state(words)
        lifted = float(head.probability(head_features(state, at_word)))
        return {"zero_shot": round(guess.zero_shot, 4), "head": round(lifted, 4),
                "read_by_the_rule": round(combined(guess.zero_shot, lifted), 4)}

    about = {"requests": len(every), "train_lines": len(train_lines), "held_out_lines": len(test_lines),
             "train_examples": int(len(y)), "train_complete": int(y.sum()), "l2": lam,
             "requests_sha256": hashlib.sha256(REQUESTS.read_bytes()).hexdigest()[:16], "prompt": PROMPT}
    result = {
        "load_average": load, "about": about, "cv_log_loss": {str(k): round(v, 4) for k, v in cv.items()},
        "held_out": {"examples": int(len(y_test)), "complete": int(y_test.sum()),
                     "auc": {"head": round(auc(p_test, y_test), 4), "zero_shot": round(auc(zero_test, y_test), 4),
                             "read_by_the_rule": round(auc(read_test, y_test), 4)},
                     "log_loss_head": round(loss(head, x_test, y_test), 4),
                     "curve_head": curve(p_test, y_test), "curve_zero_shot": curve(zero_test, y_test),
                     "curve_read_by_the_rule": curve(read_test, y_test)},
        "terse_complete": {w: score(w) for w in TERSE},
        "open_phrases": {w: score(w) for w in OPEN},
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.write:
        head.save(HEAD_FILE, about)
        result["written"] = str(HEAD_FILE.relative_to(ROOT))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
