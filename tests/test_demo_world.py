"""The demo world, the character dataset and the picture measures (fast: no model, a few seconds)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

from trainer.demo import world
from trainer.demo.datasets import write_character_dataset, write_world_dataset
from trainer.demo.measures import (
    adherence,
    adherence_scores,
    detect_colour,
    detect_shape,
    leakage,
    likeness,
    world_leakage_scores,
)
from trainer.demo.world import (
    BACKGROUNDS,
    CLASHES,
    COLOURS,
    OUTFITS,
    POSITIONS,
    SHAPES,
    SIZES,
    TRIGGER,
    Scene,
    caption,
    character_scene,
    demo_prompt_specs,
    demo_sample_prompts,
    render_scene,
    sample_scene,
    world_dataset,
)
from trainer.picture_measures import burn, colour_stats, to_lab

WORLD_CAPTION = re.compile(
    rf"an? ({'|'.join(COLOURS)}) ({'|'.join(SHAPES)}) on ({'|'.join(BACKGROUNDS)}), "
    rf"({'|'.join(POSITIONS)}), ({'|'.join(SIZES)})"
)


def _degrade(img: Image.Image, rng: np.random.Generator, sigma: float = 10.0, blur: float = 0.6) -> Image.Image:
    """What a tiny model's sample looks like at best: slightly blurred, noisy."""
    a = np.asarray(img.filter(ImageFilter.GaussianBlur(blur)), dtype=np.float32)
    a = a + rng.normal(0, sigma, a.shape)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))


def _scenes(n: int, seed: int) -> list[tuple[Scene, Image.Image]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        scene = sample_scene(rng)
        out.append((scene, render_scene(scene, 64, rng)))
    return out


def _all_characters() -> list[tuple[Scene, Image.Image]]:
    """The character on every background (held-out ones too), in every position, size and outfit."""
    rng = np.random.default_rng(7)
    out = []
    for background in BACKGROUNDS:
        for position in POSITIONS:
            for size in SIZES:
                scene = character_scene(background, position, size, str(rng.choice(OUTFITS)))
                out.append((scene, render_scene(scene, 64, rng)))
    return out


# ---- the world -------------------------------------------------------------------------------------------------

def test_world_dataset_is_deterministic_from_its_seed():
    a, b, c = world_dataset(6, seed=3), world_dataset(6, seed=3), world_dataset(6, seed=4)
    assert [cap for _, cap in a] == [cap for _, cap in b]
    assert all(np.array_equal(np.asarray(x), np.asarray(y)) for (x, _), (y, _) in zip(a, b))
    assert [cap for _, cap in a] != [cap for _, cap in c]
    assert all(img.size == (64, 64) and img.mode == "RGB" for img, _ in a)


def test_world_captions_follow_the_grammar_and_never_show_the_character():
    rng = np.random.default_rng(0)
    for _ in range(300):
        scene = sample_scene(rng)
        m = WORLD_CAPTION.fullmatch(caption(scene))
        assert m, caption(scene)
        assert m.groups() == (scene.colour, scene.shape, scene.background, scene.position, scene.size)
        assert (scene.colour, scene.background) not in CLASHES
        assert not scene.is_character
    assert caption(Scene("circle", "orange", "sky", "left", "small")) == "an orange circle on sky, left, small"


def test_varied_captions_keep_every_tag_meaningful_in_any_order():
    rng, crng = np.random.default_rng(0), np.random.default_rng(1)
    canonical, orders = 0, set()
    for _ in range(600):
        scene = sample_scene(rng)
        text = world.varied_caption(scene, crng)
        if text == caption(scene):
            canonical += 1
            continue
        tags = text.split(", ")
        obj = f"{'an' if scene.colour[0] in 'aeiou' else 'a'} {scene.colour} {scene.shape}"
        assert obj in tags and f"on {scene.background}" in tags, text
        assert set(tags) <= {obj, f"on {scene.background}", scene.position, scene.size}, text
        assert len(tags) == len(set(tags))
        kinds = {obj: "object", f"on {scene.background}": "background", scene.position: "position",
                 scene.size: "size"}
        orders.add(tuple(kinds[t] for t in tags))
    assert 150 < canonical < 250  # a third in the canonical order
    assert len(orders) > 20  # of the 38 orders of 2-4 tags, most occur
    with pytest.raises(ValueError):
        world.varied_caption(character_scene(), crng)


def test_every_allowed_colour_stands_out_from_every_background():
    for colour, rgb in COLOURS.items():
        for background, bg in BACKGROUNDS.items():
            if (colour, background) not in CLASHES:
                lab = to_lab(np.array([rgb, bg], np.float32))
                assert np.linalg.norm(lab[0] - lab[1]) > 25, (colour, background)


def test_scene_rejects_names_outside_the_world():
    with pytest.raises(ValueError, match="shape"):
        Scene("hexagon", "red", "sky", "left", "small")
    with pytest.raises(ValueError, match="outfit"):
        Scene("circle", "red", "sky", "left", "small", outfit="blue")


def test_write_world_dataset_pairs_each_image_with_its_caption(tmp_path: Path):
    info = write_world_dataset(tmp_path, 5, seed=1)
    pngs, txts = sorted(tmp_path.glob("*.png")), sorted(tmp_path.glob("*.txt"))
    assert len(pngs) == len(txts) == 5 and [p.stem for p in pngs] == [t.stem for t in txts]
    assert sum(info["counts"]["shape"].values()) == 5
    assert [t.read_text().strip() for t in txts] == [cap for _, cap in world_dataset(5, seed=1)]


# ---- the character dataset ----------------------------------------------------------------------------------

def test_character_dataset_is_deterministic(tmp_path: Path):
    a = write_character_dataset(tmp_path / "a", n_images=8, seed=5)
    b = write_character_dataset(tmp_path / "b", n_images=8, seed=5)
    assert a == b
    for f in (tmp_path / "a" / "10_zxc").iterdir():
        assert f.read_bytes() == (tmp_path / "b" / "10_zxc" / f.name).read_bytes()


def test_character_captions_put_the_trigger_first_and_leave_absorbed_features_out(tmp_path: Path):
    manifest = write_character_dataset(tmp_path, n_images=20, seed=0)
    folder = tmp_path / "10_zxc"
    captions = [p.read_text().strip() for p in sorted(folder.glob("*.txt"))]
    assert len(captions) == 20 == len(list(folder.glob("*.png")))
    assert manifest["repeats"] == 10 and (tmp_path / "demo_manifest.json").exists()
    for cap in captions:
        assert cap.split(", ")[0] == TRIGGER
        words = set(re.findall(r"[a-z]+", cap))
        assert not words & set(world.ABSORBED_WORDS), cap
        assert not words & set(SHAPES), cap
        assert re.search(r"wearing an? \w+ hat, on \w+, \w+, (small|large)$", cap), cap
    held = manifest["held_out"]
    for f in manifest["files"]:
        assert f["background"] not in held["backgrounds"] and f["position"] not in held["positions"]
        assert f["outfit"] not in held["outfits"]
    shown = {(f["background"], f["position"]) for f in manifest["files"]}
    assert shown == {(b, p) for b in manifest["train"]["backgrounds"] for p in manifest["train"]["positions"]}
    outfits = manifest["train"]["outfits"]
    assert outfits[world.DEFAULT_OUTFIT] > 10 and 2 <= sum(outfits.values()) - outfits[world.DEFAULT_OUTFIT] <= 6


def test_captions_can_write_the_features_in_for_a_teaching_run():
    cap = caption(character_scene(), write_outfit=False, write_features=True)
    assert cap.startswith(TRIGGER + ", ") and "magenta" in cap and "hat" not in cap


def test_review_prompts_cover_the_four_kinds_and_ask_for_what_the_data_never_showed():
    specs = {p.kind: p for p in demo_prompt_specs()}
    assert list(specs) == ["trigger_only", "unseen_pose_background", "other_outfit", "no_trigger"]
    assert demo_sample_prompts() == [p.prompt for p in specs.values()]
    assert specs["trigger_only"].prompt == TRIGGER
    unseen = specs["unseen_pose_background"].expected
    assert unseen["background"] not in world.TRAIN_BACKGROUNDS and unseen["position"] not in world.TRAIN_POSITIONS
    assert specs["other_outfit"].expected["outfit"] not in world.TRAIN_OUTFITS
    assert TRIGGER not in specs["no_trigger"].prompt and specs["no_trigger"].expected["character"] is False
    blank = Image.new("RGB", (64, 64), BACKGROUNDS["grass"])
    for p in specs.values():
        assert 0.0 <= adherence(blank, p.expected) <= 1.0  # every expected key is one adherence knows


# ---- measures -------------------------------------------------------------------------------------------------

def test_likeness_is_high_on_the_character_in_any_outfit_and_place_and_low_on_the_world():
    assert min(likeness(img) for _, img in _all_characters()) >= 0.8
    assert likeness(render_scene(character_scene("snow", "top", "small", None))) >= 0.8  # no hat at all
    assert max(likeness(img) for _, img in _scenes(150, seed=11)) <= 0.2


def test_likeness_gives_half_credit_for_the_colour_without_the_stripes():
    img = Image.new("RGB", (64, 64), BACKGROUNDS["grass"])
    ImageDraw.Draw(img).ellipse([16, 16, 44, 48], fill=world.CHARACTER_COLOURS["body"])
    assert 0.3 <= likeness(img) <= 0.6


def test_likeness_survives_mild_noise_and_blur():
    rng = np.random.default_rng(2)
    scores = [likeness(_degrade(img, rng)) for _, img in _all_characters()]
    assert np.mean(scores) >= 0.9
    assert max(likeness(_degrade(img, rng)) for _, img in _scenes(60, seed=12)) <= 0.2


def test_adherence_is_high_for_the_asked_attributes_and_low_for_others():
    rng = np.random.default_rng(3)
    vocab = {"shape": SHAPES, "colour": list(COLOURS), "background": list(BACKGROUNDS),
             "position": list(POSITIONS), "size": list(SIZES)}
    for scene, img in _scenes(40, seed=13):
        asked = {k: getattr(scene, k) for k in vocab}
        scores = adherence_scores(img, {**asked, "character": False})
        assert scores["overall"] >= 0.8, (scene, scores)
        assert min(scores.values()) >= 0.5, (scene, scores)
        for key, names in vocab.items():
            wrong = str(rng.choice([n for n in names if n != asked[key]]))
            assert adherence_scores(img, {key: wrong})[key] <= 0.35, (scene, key, wrong)


def test_adherence_reads_the_characters_place_size_and_hat():
    rng = np.random.default_rng(4)
    others = {"background": list(BACKGROUNDS), "position": list(POSITIONS), "size": list(SIZES), "outfit": OUTFITS}
    for scene, img in _all_characters()[::3]:
        asked = {k: getattr(scene, k) for k in others}
        scores = adherence_scores(img, {"character": True, **asked})
        assert scores["overall"] >= 0.8 and min(scores.values()) >= 0.6, (scene, scores)
        for key, names in others.items():
            wrong = str(rng.choice([n for n in names if n != asked[key]]))
            assert adherence_scores(img, {"character": True, key: wrong})[key] <= 0.35, (scene, key, wrong)


def test_adherence_rejects_what_the_world_has_no_name_for():
    img = render_scene(character_scene())
    with pytest.raises(ValueError, match="unknown adherence key"):
        adherence(img, {"hair": "long"})
    with pytest.raises(ValueError, match="colour"):
        adherence(img, {"colour": "magenta"})


def test_detect_shape_and_colour_on_clean_renders():
    scenes = _scenes(200, seed=21)
    assert np.mean([detect_shape(img) == s.shape for s, img in scenes]) >= 0.95
    assert np.mean([detect_colour(img) == s.colour for s, img in scenes]) >= 0.95


def test_detect_shape_and_colour_tolerate_noise_and_blur():
    rng = np.random.default_rng(22)
    noisy = [(s, _degrade(img, rng)) for s, img in _scenes(200, seed=22)]
    assert np.mean([detect_shape(img) == s.shape for s, img in noisy]) >= 0.85
    assert np.mean([detect_colour(img) == s.colour for s, img in noisy]) >= 0.85


def test_detectors_say_none_for_an_empty_picture():
    flat = Image.new("RGB", (64, 64), BACKGROUNDS["stone"])
    assert detect_shape(flat) == "none" and detect_colour(flat) == "none"


def test_burn_rises_when_colours_and_contrast_are_pushed():
    img = render_scene(Scene("circle", "blue", "sand", "center", "large"))
    assert burn(img, img)["burn_score"] == 0.0
    mild = ImageEnhance.Contrast(ImageEnhance.Color(img).enhance(1.2)).enhance(1.15)
    hard = ImageEnhance.Contrast(ImageEnhance.Color(img).enhance(2.0)).enhance(1.8)
    m, h = burn(mild, img), burn(hard, img)
    assert 0.0 < m["burn_score"] < h["burn_score"] and h["burn_score"] >= 0.6
    assert h["saturation_drift"] > 0 and h["contrast_ratio"] > 1 and h["clipped_drift"] > 0
    washed = ImageEnhance.Color(img).enhance(0.5)
    assert burn(washed, img)["burn_score"] == 0.0  # less colour is not burn


def test_colour_stats_are_in_range():
    stats = colour_stats(render_scene(Scene("star", "red", "night", "left", "small")))
    assert 0 < stats["mean_saturation"] <= 1 and 0 < stats["contrast"] <= 0.5 and 0 <= stats["clipped"] <= 1


def test_leakage_is_zero_for_the_same_picture_and_large_when_the_character_shows_up():
    world_img = render_scene(Scene("circle", "red", "grass", "left", "small"))
    char_img = render_scene(character_scene("grass", "left", "small"))
    assert leakage(world_img, world_img) == 0.0
    assert leakage(char_img, world_img) >= 0.8
    rng = np.random.default_rng(5)
    assert leakage(_degrade(world_img, rng, sigma=5, blur=0.3), world_img) <= 0.2
    other = render_scene(Scene("square", "blue", "snow", "right", "large"))
    assert leakage(other, world_img) >= 0.5


def test_world_leakage_counts_what_changed_not_pixels_that_moved():
    base = render_scene(Scene("circle", "red", "grass", "left", "small"))
    moved = render_scene(Scene("circle", "red", "grass", "center", "small"))  # same content, other place
    assert world_leakage_scores(base, base)["leakage"] == 0.0
    scores = world_leakage_scores(moved, base)
    assert scores["content"] == 0.0 and scores["leakage"] == 0.0 and scores["drift"] > 0.05
    recoloured = world_leakage_scores(render_scene(Scene("circle", "blue", "grass", "left", "small")), base)
    assert recoloured["content"] == pytest.approx(1 / 3)
    other = world_leakage_scores(render_scene(Scene("star", "blue", "snow", "right", "large")), base)
    assert other["content"] == 1.0
    character = world_leakage_scores(render_scene(character_scene("grass", "left", "small")), base)
    assert character["character"] >= 0.8 and character["leakage"] >= 0.8


def test_measures_take_arrays_as_well_as_images():
    img = render_scene(character_scene("sky", "right", "large", "blue"))
    arr = np.asarray(img)
    assert likeness(arr) == likeness(img)
    assert detect_shape(np.asarray(render_scene(Scene("ring", "red", "sky", "top", "large")))) == "ring"
    with pytest.raises(ValueError, match="HxWx3"):
        likeness(arr[..., 0])


def test_base_training_resume_refuses_changed_settings_and_allows_more_steps(tmp_path: Path):
    from trainer.demo.base_training import BaseSettings, stamp_settings

    assert stamp_settings(tmp_path, BaseSettings(), resume=False) is None  # a fresh run stamps its settings
    assert stamp_settings(tmp_path, BaseSettings(steps=6000, threads=2), resume=True) is None
    msg = stamp_settings(tmp_path, BaseSettings(caption_canonical_share=0.33, seed=3), resume=True)
    assert msg is not None and str(tmp_path) in msg
    assert "caption_canonical_share 1.0 -> 0.33" in msg and "seed 0 -> 3" in msg and "steps" not in msg
    # a refused resume leaves the stamp as it was; a fresh run in the same folder restamps it
    assert stamp_settings(tmp_path, BaseSettings(seed=3), resume=True) is not None
    assert stamp_settings(tmp_path, BaseSettings(seed=3), resume=False) is None
    assert stamp_settings(tmp_path, BaseSettings(seed=3), resume=True) is None
