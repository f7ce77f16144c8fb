"""HTML to Markdown for reading pages: content kept, page chrome dropped, dates recovered.

One parse per page: the publication time is read from the tree first (it lives in ``<meta>``,
JSON-LD and ``<time>``, all of which the conversion drops), then scripts, styles, navigation,
asides and hidden elements are removed, links are made absolute so the model can follow them,
and markdownify writes what is left.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

# Removed with their content: none of it is page text.
_DROPPED_TAGS = {
    "script", "style", "noscript", "template", "head", "nav", "aside", "footer", "iframe",
    "svg", "canvas", "button", "select", "textarea", "input", "dialog", "object", "embed",
}  # fmt: skip
_DROPPED_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu"}
_DATE_META_KEYS = {
    "article:published_time", "og:article:published_time", "datepublished", "date", "pubdate",
    "publishdate", "publish-date", "publish_date", "dc.date", "dc.date.issued", "dcterms.issued",
    "dcterms.created", "sailthru.date", "parsely-pub-date", "citation_publication_date",
    "citation_date", "article.published",
}  # fmt: skip
# lxml parses about three times faster than the standard library's parser; either works.
_PARSER = "lxml" if importlib.util.find_spec("lxml") else "html.parser"
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")

_converter = MarkdownConverter(heading_style="ATX", bullets="-", escape_misc=False)


class _Tag(Tag):
    """A Tag whose ``find_parent(name)`` walks up the tree directly.

    markdownify asks every element for ``find_parent("pre")``; through bs4's general matcher
    that is about half the time spent converting a large page.
    """

    def find_parent(self, name: Any = None, attrs: Any = None, **kwargs: Any) -> Any:
        if not isinstance(name, str) or attrs or kwargs:
            return super().find_parent(name, attrs, **kwargs)
        parent = self.parent
        while parent is not None and parent.name != name:
            parent = parent.parent
        return parent


def parse(html: str) -> BeautifulSoup:
    """Parse a page or an HTML fragment."""
    return BeautifulSoup(html, _PARSER, element_classes={Tag: _Tag})


def page_to_markdown(html: str, url: str) -> str:
    """A whole page as Markdown, led by a ``Published:`` line when the page states one."""
    soup = parse(html)
    published = published_time(soup)
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    markdown = soup_to_markdown(soup, url)
    if title and not markdown.startswith("# "):
        markdown = f"# {title}\n\n{markdown}"
    return f"Published: {published}\n\n{markdown}" if published else markdown


def soup_to_markdown(soup: BeautifulSoup, url: str) -> str:
    """Convert a parsed page, keeping only its ``<main>`` when it has one. Mutates ``soup``."""
    base = url
    head = soup.head or soup
    if (base_tag := head.find("base", href=True)) is not None:
        base = urljoin(url, str(base_tag["href"]))
    root = next((tag for tag in _tags(soup) if tag.name == "main"), None) or soup.body or soup
    _prune(root, base)
    text = _converter.convert_soup(root)
    text = _TRAILING_SPACE.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _tags(node: Tag) -> Iterator[Tag]:
    return (child for child in node.descendants if isinstance(child, Tag))


def _prune(root: Tag, base: str) -> None:
    """Drop what is not page text and make links absolute, in one walk of the tree.

    A plain walk rather than bs4's ``find_all``: its general matcher costs seconds on a
    large page, more than the conversion itself.
    """
    doomed: list[Tag] = []
    images: list[Tag] = []
    stack: list[tuple[Tag, bool]] = [(root, root.name in ("main", "article"))]
    while stack:
        node, in_content = stack.pop()
        for child in node.contents:
            if not isinstance(child, Tag):
                continue
            if child.name in _DROPPED_TAGS or _is_chrome(child, in_content):
                doomed.append(child)
                continue
            if child.name == "a" and child.has_attr("href"):
                href = str(child["href"]).strip()
                if href.lower().startswith(("javascript:", "data:")):
                    del child["href"]
                elif not href.startswith("#"):
                    child["href"] = urljoin(base, href)
            elif child.name == "img":
                images.append(child)
            stack.append((child, in_content or child.name in ("main", "article")))
    for tag in doomed:
        tag.decompose()
    for image in images:
        src = str(image.get("src", "")).strip()
        if not src or src.lower().startswith("data:"):
            image.replace_with(str(image.get("alt", "")))
        else:
            image["src"] = urljoin(base, src)


def _is_chrome(tag: Tag, in_content: bool) -> bool:
    attrs = tag.attrs
    if not attrs:
        return tag.name == "header" and not in_content
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if str(attrs.get("role", "")).lower() in _DROPPED_ROLES:
        return True
    if "display:none" in str(attrs.get("style", "")).replace(" ", "").lower():
        return True
    return tag.name == "header" and not in_content


def published_time(soup: BeautifulSoup) -> str:
    """The page's publication time as written there (usually ISO 8601), or ``""``.

    Looked for in order of reliability: ``<meta>`` tags, JSON-LD ``datePublished``, microdata
    ``itemprop="datePublished"``, then a ``<time datetime>``, one inside the article first.
    """
    json_ld: list[Tag] = []
    microdata: list[Tag] = []
    times: list[Tag] = []
    for tag in _tags(soup):
        if tag.name == "meta" and tag.has_attr("content"):
            key = tag.get("property") or tag.get("name") or tag.get("itemprop") or ""
            if str(key).strip().lower() in _DATE_META_KEYS and str(tag["content"]).strip():
                return _clean(tag["content"])
        elif tag.name == "script" and tag.get("type") == "application/ld+json":
            json_ld.append(tag)
        elif tag.name == "time" and tag.has_attr("datetime"):
            times.append(tag)
        if tag.get("itemprop") == "datePublished":
            microdata.append(tag)
    for script in json_ld:
        try:
            data = json.loads(script.string or "")
        except ValueError:
            continue
        for value in _json_values(data, "datePublished"):
            if isinstance(value, str) and value.strip():
                return _clean(value)
    for tag in microdata:
        if value := tag.get("datetime") or tag.get("content") or tag.get_text(" ", strip=True):
            return _clean(value)
    for scope in ("article", "main"):
        for tag in times:
            if tag.find_parent(scope) is not None:
                return _clean(tag["datetime"])
    return _clean(times[0]["datetime"]) if times else ""


def _json_values(data: Any, key: str) -> Iterator[Any]:
    if isinstance(data, dict):
        if key in data:
            yield data[key]
        for value in data.values():
            yield from _json_values(value, key)
    elif isinstance(data, list):
        for item in data:
            yield from _json_values(item, key)


def _clean(value: Any) -> str:
    return " ".join(str(value).split())
