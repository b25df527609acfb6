"""The Chinese edition (tools/editions/translations.py) is complete,
current and uses the glossary's terms: (a) every unit of every page is
translated and current; (b) every linked glossary term appears in one of its
accepted Chinese forms; (c) one word per concept (translations.TERMS);
(d) the store round-trips and `sync` marks changed English as outdated.
"""

from __future__ import annotations

import re
import shutil

import nbformat
import pytest
from tests import live_pages as lp
from tools.editions import code_comments, translations
from tools.editions.glossary_links import GLOSSARY, glossary_terms
from tools.editions.notebooks import setup_source

TERM_ROLE = re.compile(r"\{term\}`([^`]*)`")


def test_every_page_has_a_current_translation():
    pages = translations.pages()
    assert pages, "no pages found in _toc.yml"
    by_page = {p.name: translations.problems(p) for p in pages}
    found = [msg for msgs in by_page.values() for msg in msgs]
    summary = ", ".join(f"{n}: {len(m)}" for n, m in by_page.items() if m)
    assert not found, (
        f"{len(found)} units of the Chinese edition are not current "
        f"({summary}).\nRun `make translations`, translate each `zh`, then "
        "replace `en` by `en_now`:\n" + "\n".join(found)
    )


def glossary_bold() -> dict[str, str]:
    """Glossary entry (first name) -> its definition's bold Chinese names."""
    block = (
        GLOSSARY.read_text().split(":::{glossary}", 1)[1].split("\n:::", 1)[0]
    )
    found, names = {}, []
    for line in block.splitlines():
        if not line.strip() or line.startswith(":"):
            continue
        if not line[0].isspace():
            names.append(line.strip())
            continue
        if names and (bold := re.search(r"\*\*(.+?)\*\*", line)):
            found[names[0]] = bold.group(1)
        names = []
    return found


def chinese_forms() -> dict[str, tuple[str, ...]]:
    """Glossary entry -> its accepted Chinese forms: the bold name and those
    in its parentheses ("集束搜索（束搜索）" -> ("集束搜索", "束搜索"))."""
    forms = {}
    for name, bold in glossary_bold().items():
        parts = re.split(r"[（()）、；;]", bold)
        forms[name] = tuple(p.strip() for p in parts if p.strip())
    return forms


def test_glossary_has_a_chinese_form_for_every_term():
    forms, entries = chinese_forms(), set(glossary_terms().values())
    # Some Chinese forms are the English word itself (Transformer, logits).
    assert entries and set(forms) == entries, sorted(entries ^ set(forms))


def linked_terms(text: str) -> set[str]:
    """The glossary entries a piece of English links with {term}."""
    names, out = glossary_terms(), set()
    for role in TERM_ROLE.findall(text):
        target = re.search(r"<([^>]*)>\s*$", role)
        name = (target.group(1) if target else role).strip().lower()
        out.add(names.get(name, name))
    return out


def test_chinese_text_uses_the_glossary_terms():
    """Over the translated units only (an untranslated one is test (a)'s)."""
    forms, missing = chinese_forms(), []
    for page in translations.pages():
        if page.name == GLOSSARY.name:
            continue
        store, terms, chinese = translations.load(page), set(), ""
        for key, english in translations.units(page).items():
            zh = str(store.get(key, {}).get("zh") or "")
            if zh.strip():
                terms |= linked_terms(english)
                chinese += zh + "\n"
        for term in sorted(terms):
            if term not in forms:
                missing.append(
                    f"{page.name}: {{term}} `{term}` is not in the glossary"
                )
            elif not any(form in chinese for form in forms[term]):
                missing.append(
                    f"{page.name}: '{term}' is linked in the English, but "
                    f"none of its glossary forms ({' / '.join(forms[term])}) "
                    "is in the Chinese"
                )
    assert not missing, "\n".join(missing)


def test_the_glossary_accepts_natural_and_d2l_forms():
    forms = chinese_forms()
    assert forms["softmax"] == ("softmax", "归一化指数函数")
    assert "BLEU" in forms["BLEU"]
    assert forms["beam search"] == ("束搜索", "集束搜索")
    assert "层规范化" in forms["layer normalisation"]
    assert forms["token"] == ("词元",)


def test_chinese_uses_one_word_per_concept():
    pages = translations.pages()
    found = [m for p in pages for m in translations.term_problems(p)]
    table = "; ".join(
        f"{c}: {pref} (not {', '.join(rej)})"
        for c, pref, rej in translations.TERMS
    )
    assert not found, (
        f"{len(found)} rejected forms in the Chinese edition ({table}):\n"
        + "\n".join(found)
    )


def test_figure_labels_and_code_comments_use_one_word_per_concept():
    """Figure texts and code comments hold no rejected form of TERMS."""
    found = translations.comment_and_label_problems()
    assert not found, "\n".join(found)


DECIDED = [  # a sentence with a rejected form; its rewording passes
    # issue #48
    ("训练好的注音模型。", "训练好的发音模型。"),
    ("读音模型读入字母。", "发音模型读入字母。"),
    ("这个词有两种读音。", "这个词有两种发音；多音字有几种读法。"),
    ("字素到音素转换是一个任务。", "字音转换（字素到音素转换，G2P）。"),
    ("前瞻掩码的形状。", "因果掩码的形状。"),
    ("讲义这样写。", "笔记这样写。"),
    ("讲座笔记这样写。", "笔记这样写。"),
    ("完全正确率为一半。", "完全匹配率为一半。"),
    ("True = 允许关注。", "True = 可以关注。"),
    ("没有可关注的键。", "没有可以关注的键；查询会关注键。"),
    ("批量规范化对列归一化。", "批归一化（批量规范化）对列归一化。"),
    ("基于位置的前馈网络。", "逐位置前馈网络（基于位置的前馈网络）。"),
    ("用了暂退法。", "用了 dropout（暂退法）。"),
    ("标为 LayerNorm。", "层归一化（LayerNorm）；代码 `nn.LayerNorm`。"),
    ("标为 BatchNorm。", "标为批归一化。"),
    ("**需要的准备：**", "**你需要：**"),
    ("你将会得到这些。", "**你将得到：**"),
    ("损失所看的位置。", "损失计算的位置。"),
    ("这是乔装的步数。", "这并非只是更多的步数。"),
    ("需要打分的位置对数。", "需要打分的位置对的个数。"),
    # issue #63 (locale/zh/terms/terms.yml)
    ("加载保存的模型。", "加载存储的模型。"),
    ("与训练脚本存下的分数相同。", "与训练脚本存储的分数相同。"),
    ("在全部测试词上解码。", "在全部测试单词上解码；测试词元不是单词。"),
    ("训练词和验证词。", "训练单词和验证单词；训练词表。"),
    ("字符 5-gram 和 n-gram。", "字符 5 元语法和 n元语法。"),
    ("每个 unigram 和 bigram。", "每个一元语法和二元语法。"),
    ("词元三元模型胜过字符 5 元模型。", "词元三元语法胜过 BPE 词元模型。"),
    ("一个 5 元联合序列模型。", "一个 5 元语法联合序列模型。"),
    ("一张二元计数表。", "一张二元语法计数表。"),
    ("样本的抄录率。", "样本的照抄率。"),
    ("样本的复制率。", "样本的照抄率。"),
    ("你的提示显示为灰色。", "你的提示词显示为灰色。"),
    ("在全景图上。", "在课程地图上。"),
    ("500 条中完全正确的占一半。", "完全匹配率为一半。"),
    ("位置 1 到 15。", "位置 1 至 15；从 0.5 降到 0.3。"),
    (
        "以 bos 开头，以 eos 结尾。",
        "以 BOS 开头，以 EOS 结尾；`bos` 是代码。",
    ),
    ("验证剧本上的损失。", "验证集剧本上的损失。"),
    ("测试剧本合起来。", "测试集剧本合起来。"),
    ("集成能换来多少。", "集成的收益有多大。"),
    ("### 第二种意见：重新打分", "### 借助另一个模型：重新打分"),
    ("差别来自平局。", "差别出在计数相同的字节对上。"),
    ("模式检测：准确率", "基序检测：准确率"),
    ("只看计数", "仅计数"),
    ("广播到分数的形状，再取 AND", "广播到分数的形状，再做逻辑与（AND）"),
]


@pytest.mark.parametrize("bad, good", DECIDED)
def test_the_decided_terms_are_enforced(bad, good):
    """Issues #48 and #63: the rejected form is found, the accepted passes."""
    rejected, prose = translations.rejected_forms, translations.chinese_prose
    assert rejected(prose(bad)), bad
    assert not rejected(prose(good)), good


def test_english_connectives_left_are_found():
    left = translations.connectives_left
    assert left("两个掩码做 AND 组合。") == ["AND"]
    assert left("这张表是一个 **buffer**：它随模型移动。") == ["buffer"]
    assert left("查询 and 键，或者 the 值。") == ["and", "the"]
    # not connectives: code, maths, roles, links, quotations, examples, names
    for fine in [
        "把 `mask and keep` 与 $a \\text{ and } b$ 比较。",
        "它指的是 *the robot*，依附于 *the orders*。",
        "英语句子“the robot must obey”。",
        "本课程延续了 The Annotated Transformer 和《动手学深度学习》"
        "（Dive into Deep Learning）的传统。",
        "见 {cite:p}`vaswani2017attention` 和[第 3 章](03_masks.ipynb)。",
        "(a) 仅编码器，(b) 仅解码器；A, B, EOS 的概率。",
        "the robot and the orders",  # no Chinese: test (a)'s business
    ]:
        assert left(fine) == [], fine


def test_colon_chains_are_found():
    sentence = "这是一个用来凑足长度的普通中文句子，没有别的用处"  # 23 CJK
    assert len(translations.CJK.findall(sentence)) == 23
    body = "。".join([sentence] * 10)  # 230 CJK characters
    chain = "比较三种做法：相乘：忽略：选取，" + body
    [(colons, n)] = translations.colon_chains(chain)
    assert colons == 3 and n >= translations.COLONS_MIN_CJK
    # one colon in 230 characters is under the density
    assert translations.colon_chains("做法：" + body) == []
    # the same chain in a short paragraph is not measured
    assert translations.colon_chains("做法：相乘：忽略：选取。") == []
    # structural colons: a heading, a bold label, a line introducing a list
    structured = (
        "### 练习 1：改成除以 d\n\n**你需要：**" + body + "如下：\n- 一"
    )
    assert translations.colon_chains(structured) == []
    # paragraphs are measured one by one
    assert len(translations.colon_chains(chain + "\n\n" + chain)) == 2


def test_style_problems_name_page_unit_and_pattern(chapter, monkeypatch):
    # the page-wide colon density: test_colon_density_is_counted_per_page's
    monkeypatch.setattr(translations, "COLONS_LEFT", {"03_"})
    entries, units = filled(chapter), translations.units(chapter)
    opener = next(
        k for k, text in units.items() if "**What you need:**" in text
    )
    entries[opener]["zh"] = "**你需要：**注意力。\n\n**你将得到：**掩码。"
    translations.save(chapter, entries)
    assert translations.style_problems(chapter) == []

    other = next(k for k in entries if k != opener and "/" not in k)
    entries[opener]["zh"] = "**需要的准备：**注意力。**将会得到：**掩码。"
    entries[other]["zh"] = "填充掩码 and 因果掩码。"
    translations.save(chapter, entries)
    found = translations.style_problems(chapter)
    name = chapter.name
    assert found == [
        f"{name} [{opener}] the opener is not written **你需要：**",
        f"{name} [{opener}] the opener is not written **你将得到：**",
        f"{name} [{other}] English connectives left in the Chinese: and",
    ], found


def test_d2l_names_are_given_at_first_use(chapter, tmp_path):
    entries = filled(chapter)
    prose = [k for k in entries if "/" not in k]
    entries[prose[1]]["zh"] = "批归一化对列归一化；dropout 只在训练时生效。"
    entries[prose[2]]["zh"] = "再说一次批归一化和 dropout。"
    translations.save(chapter, entries)
    found = translations.aside_problems([chapter])
    assert [m.split(" is not")[0] for m in found] == [
        f"{chapter.name} [{prose[1]}] the course's first 批归一化",
        f"{chapter.name} [{prose[1]}] the chapter's first dropout",
    ], found
    entries[prose[1]]["zh"] = (
        "批归一化（《动手学深度学习》译作批量规范化）对列归一化；"
        "dropout（暂退法）只在训练时生效。"
    )
    translations.save(chapter, entries)
    assert translations.aside_problems([chapter]) == []
    # dropout is given again in every chapter, 批归一化 once in the course
    second = chapter.with_name("04_positional_encoding.ipynb")
    shutil.copy(translations.ROOT / "book" / second.name, second)
    filled(second, "批归一化和 dropout。")
    [msg] = translations.aside_problems([chapter, second])
    assert "the chapter's first dropout" in msg and second.name in msg


def test_the_chinese_reads_as_chinese():
    """No style problem, and d2l-zh's names given at first use."""
    pages = translations.pages()
    found = [m for p in pages for m in translations.style_problems(p)]
    found += translations.aside_problems(pages)
    assert not found, f"{len(found)} problems:\n" + "\n".join(found)


def test_a_wrapped_comment_never_starts_a_line_with_punctuation():
    source = "x = 1\n# the seed, or COURSE_SEED when set\n"
    # 38 wide characters fill 76 of the 77 columns: the ） goes on
    cut = "种子" * 19 + "）。"
    assert code_comments.wrap(cut, 77)[1].startswith("）")
    table = {"the seed, or COURSE_SEED when set": cut}
    assert code_comments.bad_breaks(source, table) == [cut]
    table["the seed, or COURSE_SEED when set"] = "本次运行的种子。"
    assert code_comments.bad_breaks(source, table) == []


def test_an_other_name_in_parentheses_and_the_index_are_allowed(
    chapter, monkeypatch
):
    translations.sync(chapter)
    entries = translations.load(chapter)
    key = next(iter(entries))
    for zh, flagged in [
        ("先做束搜索（集束搜索），再比较。", False),
        ("层归一化（《动手学深度学习》译作层规范化）。", False),
        ("先做集束搜索，再比较。", True),
        ("| 集束搜索 | jíshù sōusuǒ | {term}`beam search` |", False),
        ("贪婪解码。", True),
        ("训练了 3 个轮次。", True),
    ]:
        entries[key]["zh"] = zh
        translations.save(chapter, entries)
        found = [
            m
            for m in translations.term_problems(chapter)
            if f"[{key}]" in m and "词元（token）" not in m
        ]
        assert bool(found) == flagged, (zh, found)


def test_term_problems_names_page_unit_and_form(chapter):
    translations.sync(chapter)
    entries, units = translations.load(chapter), translations.units(chapter)
    for key, entry in entries.items():
        headings = translations.SOLUTION.findall(units[key])
        entry["zh"] = (
            "\n".join(f":::{{admonition}} 解答 {n} 及讲解" for n in headings)
            or "译文"
        )
    translations.save(chapter, entries)
    assert translations.term_problems(chapter) == []

    keys = [k for k in entries if not translations.SOLUTION.search(units[k])]
    # a bare first 词元
    entries[keys[1]]["zh"] = "每个词元都能看到 `token` 和 $token$。"
    entries[keys[2]]["zh"] = "同一个 Transformer 堆栈；下一个 token 被遮住了。"
    entries[keys[3]]["zh"] = "{term}`one-hot 向量 <one-hot>`，下面的单元格。"
    solution = next(
        k for k in entries if translations.SOLUTION.search(units[k])
    )
    entries[solution]["zh"] = ":::{admonition} 练习 1 解答说明"
    translations.save(chapter, entries)
    found = translations.term_problems(chapter)
    name = chapter.name
    assert found[0].startswith(f"{name} [{keys[1]}] the chapter's first 词元")
    want = [
        f"{name} [{keys[2]}] 'token'",
        f"{name} [{keys[2]}] '堆栈'",
        f"{name} [{keys[2]}] '遮住'",
        f"{name} [{keys[3]}] '单元格'",
        f"{name} [{keys[3]}] 'one-hot'",
        f"{name} [{solution}] '练习 1 解答说明'",
        f"{name} [{solution}] the heading of solution 1 is not 解答 1 及讲解",
    ]
    got = sorted(m.split(" for ")[0] for m in found[1:])
    assert got == sorted(want), found

    # Code and maths are not prose; only the chapter's first 词元（token）.
    entries[keys[1]]["zh"] = (
        "每个词元（token）都能看到 `token`；之后只写词元。"
    )
    entries[keys[2]]["zh"] = entries[keys[3]]["zh"] = "译文"
    entries[solution]["zh"] = ":::{admonition} 解答 1 及讲解"
    translations.save(chapter, entries)
    assert translations.term_problems(chapter) == []
    entries[keys[2]]["zh"] = "又一个词元（token）。"
    translations.save(chapter, entries)
    [msg] = translations.term_problems(chapter)
    assert f"[{keys[2]}] 'token'" in msg


def test_linked_terms_reads_both_forms_of_the_role():
    text = "{term}`Attention`, {term}`values <value>`, {term}`look-ahead mask`"
    names = glossary_terms()
    assert linked_terms(text) == {
        names[n] for n in ("attention", "value", "look-ahead mask")
    }


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A copy of chapter 3 to edit, with a temporary store (never locale/)."""
    monkeypatch.setattr(translations, "LOCALE", tmp_path / "locale")
    chapter = tmp_path / "book" / "03_masks.ipynb"
    chapter.parent.mkdir()
    shutil.copy(translations.ROOT / "book" / "03_masks.ipynb", chapter)
    return chapter


def filled(chapter, zh: str = "译文") -> dict:
    """Sync the chapter's store, set every unit's Chinese to ``zh``, save."""
    translations.sync(chapter)
    entries = translations.load(chapter)
    for entry in entries.values():
        entry["zh"] = zh
    translations.save(chapter, entries)
    return entries


def test_the_store_round_trips(tmp_path, monkeypatch):
    files = sorted(translations.LOCALE.glob("*.yml"))
    assert files, "no translation files in locale/zh"
    monkeypatch.setattr(translations, "LOCALE", tmp_path)
    book = translations.ROOT / "book"
    for original in files:
        pages = book.glob(f"{original.stem}.*")
        page = next(p for p in pages if p.suffix in (".ipynb", ".md"))
        monkeypatch.setattr(translations, "LOCALE", original.parent)
        entries = translations.load(page)
        monkeypatch.setattr(translations, "LOCALE", tmp_path)
        translations.save(page, entries)
        again = (tmp_path / original.name).read_text()
        assert again == original.read_text(), (
            f"{original.name} changes on save"
        )


def test_sync_marks_a_changed_english_unit_as_outdated(chapter):
    added, changed = translations.sync(chapter)
    units = translations.units(chapter)
    assert (added, changed) == (len(units), 0)
    # Every unit untranslated, each named with its first English words.
    found = translations.problems(chapter)
    assert len(found) == len(units)
    assert all(" untranslated: " in msg for msg in found)

    filled(chapter)
    before = translations.store_path(chapter).read_text()
    assert translations.sync(chapter) == (0, 0)
    assert translations.store_path(chapter).read_text() == before  # idempotent
    assert translations.problems(chapter) == []

    nb = nbformat.read(chapter, as_version=4)
    cell = next(c for c in nb.cells[1:] if c.cell_type == "markdown")
    cell.source = "A changed sentence. " + cell.source
    nbformat.write(nb, chapter)
    assert translations.sync(chapter) == (0, 1)
    entry = translations.load(chapter)[cell.id]
    assert entry["en_now"] == cell.source and entry["en"] != cell.source
    first_words = " ".join(cell.source.split())[:70]
    assert translations.problems(chapter) == [
        f"03_masks.ipynb [{cell.id}] outdated (English changed): "
        f"{first_words!r}"
    ]


def test_a_translation_left_in_english_is_reported(chapter):
    entries = filled(chapter)
    key = next(iter(entries))
    entries[key]["zh"] = entries[key]["en"]
    translations.save(chapter, entries)
    [msg] = translations.problems(chapter)
    assert f"[{key}] still English" in msg


def test_every_code_comment_is_translated():
    """Every comment of the chapters (but EXEMPT) and the setup cell."""
    failing, _ = code_comments.problems(translations.pages())
    assert not failing, "\n".join(failing[:30])
    setup = code_comments.comments(setup_source())
    table = code_comments.load()
    assert setup and all(c.text in table for c in setup)


# Prints the live widgets' English texts (TEXT of the scripts in argv[2:]).
LIVE_SCRIPTS = r"""
const texts = process.argv.slice(2).map((f) => Object.values(require(f).TEXT));
console.log(JSON.stringify(texts.flat()));
"""


def test_the_live_pages_texts_are_translated(node):
    """Every live widget text has its Chinese (same {slots}, the glossary's
    words) and every Chinese entry is still shown."""
    static = translations.ROOT / "_static"
    scripts = [static / "pronouncer/pronouncer.js", static / "gpt/gpt_page.js"]
    english = set(lp.run_node(node, LIVE_SCRIPTS, *scripts))
    table = translations.live_texts()
    slots = re.compile(r"\{\w+\}")
    assert english and not english - set(table), english - set(table)
    assert not set(table) - english, f"not shown: {set(table) - english}"
    for en, zh in table.items():
        assert translations.CJK.search(zh), (en, zh)
        assert sorted(slots.findall(en)) == sorted(slots.findall(zh)), en
        prose = slots.sub(" ", zh)
        assert not translations.rejected_forms(prose), (en, zh)
    assert "COURSE_LIVE_ZH" in translations.live_texts_js()


def test_colon_density_is_counted_per_page(chapter, monkeypatch):
    """Issue #63: short paragraphs escape the paragraph check."""
    text = "做法：相乘。这是一个凑足长度的普通中文句子而已。"  # 1 in 21
    entries = filled(chapter, text)
    colons, n = translations.page_colons(chapter)
    assert colons == len(entries) and n == 21 * len(entries)
    assert translations.colon_chains(entries[next(iter(entries))]["zh"]) == []

    def page_level():
        return [
            m
            for m in translations.style_problems(chapter)
            if m.startswith(f"{chapter.name}: {colons} full-width colons")
        ]

    monkeypatch.setattr(translations, "COLONS_LEFT", set())
    assert len(page_level()) == 1
    monkeypatch.setattr(translations, "COLONS_LEFT", {"03_"})
    assert page_level() == []  # a page still to rephrase is not failed
    monkeypatch.setattr(translations, "COLONS_LEFT", set())
    filled(chapter, "做法是相乘。这是一个凑足长度的普通中文句子而已。")
    assert translations.page_colons(chapter)[0] == 0
    assert not [
        m for m in translations.style_problems(chapter) if "colons" in m
    ]
