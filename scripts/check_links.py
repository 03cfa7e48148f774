#!/usr/bin/env python3
"""Checks every relative link of the project's Markdown files (git ls-files '*.md'): the file or
folder it names must exist, and an anchor (#section) must name a heading of the target page, as
GitHub derives heading anchors. Links with a scheme (https:, mailto:) are not followed. Prints
FILE:LINE: the bad link and why, one line each, and exits 1 when there is any.
Usage: scripts/check_links.py   (from anywhere inside the repository)"""
import os
import re
import subprocess
import sys
import unicodedata

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def code_free_lines(text):
    """The page's lines with fenced blocks blanked and inline code spans removed, numbered from 1."""
    in_fence = None
    for number, line in enumerate(text.split("\n"), 1):
        fence = FENCE.match(line)
        if fence:
            if in_fence is None:
                in_fence = fence.group(1)
            elif fence.group(1) == in_fence:
                in_fence = None
            yield number, ""
            continue
        yield number, "" if in_fence else re.sub(r"(`+)(?:(?!\1).)+?\1", "", line)


def slug(heading):
    """GitHub's anchor of a heading: its text without Markdown, lower-cased, punctuation other
    than '-' and '_' dropped, spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link reads as its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    kept = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


def anchors_of(path, cache):
    if path not in cache:
        found = set()
        seen = {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        in_fence = None
        for line in text.split("\n"):
            fence = FENCE.match(line)
            if fence:
                in_fence = fence.group(1) if in_fence is None else (None if fence.group(1) == in_fence else in_fence)
                continue
            if in_fence:
                continue
            found.update(HTML_ANCHOR.findall(line))
            heading = HEADING.match(line)
            if heading:
                base = slug(heading.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def main():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    os.chdir(root)
    pages = subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True,
                           check=True).stdout.split()
    cache = {}
    bad = 0
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for number, line in code_free_lines(text):
            targets = INLINE_LINK.findall(line)
            ref = REFERENCE_DEF.match(line)
            if ref:
                targets.append(ref.group(1))
            for target in targets:
                if SCHEME.match(target):
                    continue
                path, _, anchor = target.partition("#")
                if path:
                    resolved = os.path.normpath(
                        path.lstrip("/") if path.startswith("/") else
                        os.path.join(os.path.dirname(page), path))
                else:
                    resolved = page
                why = None
                if resolved.startswith(".."):
                    why = "points outside the repository"
                elif not os.path.exists(resolved):
                    why = "no such file"
                elif anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                    if anchor not in anchors_of(resolved, cache):
                        why = f"no heading '#{anchor}' in {resolved}"
                if why:
                    print(f"{page}:{number}: bad link '{target}': {why}")
                    bad += 1
    if bad:
        print(f"check_links: {bad} bad link(s) in the Markdown files", file=sys.stderr)
        return 1
    print(f"check_links: every relative link of {len(pages)} Markdown files resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
