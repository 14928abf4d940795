"""The arithmetic Tests/Support/hdr-clips.py and hdr-stills.py share: ITU-R BT.2100's PQ and HLG curves,
BT.2408's reference white, BT.2087's BT.709 to BT.2020 matrix, and the two measures the HDR tests use
(mad: mean |a-b| over pixels and channels in 0..255 levels; colourfulness: mean max-min of R, G, B).
All functions work on float64 numpy arrays."""

import numpy as np

REF_WHITE = 203.0  # cd/m2, BT.2408 SDR reference white
HLG_LW, HLG_GAMMA = 1000.0, 1.2
BT709_TO_2020 = np.array([[0.6274, 0.3293, 0.0433], [0.0691, 0.9195, 0.0114], [0.0164, 0.0880, 0.8956]])
K709, K2020 = (0.2126, 0.0722), (0.2627, 0.0593)  # (Kr, Kb)
M1, M2 = 2610 / 16384, 2523 / 4096 * 128
C1, C2, C3 = 3424 / 4096, 2413 / 4096 * 32, 2392 / 4096 * 32
HLG_A = 0.17883277
HLG_B = 1 - 4 * HLG_A
HLG_C = 0.5 - HLG_A * np.log(4 * HLG_A)


# --- metrics -------------------------------------------------------------------------------------------
def mad(a, b):
    """Mean over pixels and the 3 channels of |a - b|, in 0..255 levels."""
    return float(np.mean(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def colourfulness(a):
    a = np.asarray(a, np.float64)
    return float(np.mean(a.max(axis=2) - a.min(axis=2)))


def colour_ratio(a, ref):
    return colourfulness(a) / colourfulness(ref)


# --- transfer functions -------------------------------------------------------------------------------
def srgb_eotf(v):  # IEC 61966-2-1, the piecewise curve
    return np.where(v <= 0.04045, v / 12.92, np.power((v + 0.055) / 1.055, 2.4))


def srgb_inverse_eotf(l):
    l = np.clip(l, 0, 1)
    return np.where(l <= 0.0031308, 12.92 * l, 1.055 * np.power(l, 1 / 2.4) - 0.055)


def pq_inverse_eotf(y):  # y = F_D / 10000 -> E'
    p = np.power(np.clip(y, 0, 1), M1)
    return np.power((C1 + C2 * p) / (1 + C3 * p), M2)


def pq_eotf(e):  # E' -> F_D / 10000
    p = np.power(np.clip(e, 0, 1), 1 / M2)
    return np.power(np.maximum(p - C1, 0) / (C2 - C3 * p), 1 / M1)


def hlg_oetf(e):
    e = np.clip(e, 0, None)
    return np.where(e <= 1 / 12, np.sqrt(3 * e), HLG_A * np.log(np.maximum(12 * e - HLG_B, 1e-12)) + HLG_C)


def hlg_inverse_oetf(e):
    return np.where(e <= 0.5, e * e / 3, (np.exp((e - HLG_C) / HLG_A) + HLG_B) / 12)


def luminance_2020(rgb):
    return rgb @ np.array([0.2627, 0.6780, 0.0593])


def hlg_from_display(fd):  # display light (cd/m2) -> E' by the inverse OOTF, then the OETF
    yd = luminance_2020(fd)[..., None]
    ys = np.power(yd / HLG_LW, 1 / HLG_GAMMA)
    es = np.where(yd > 0, fd / HLG_LW * np.power(np.maximum(ys, 1e-12), 1 - HLG_GAMMA), 0.0)
    return hlg_oetf(es)


def hlg_to_display(e):  # E' -> scene light -> display light by the OOTF
    es = hlg_inverse_oetf(e)
    ys = luminance_2020(es)[..., None]
    return HLG_LW * np.power(np.maximum(ys, 1e-12), HLG_GAMMA - 1) * es
