// Decoding, resizing and encoding images, with sharp (libvips) — the library
// Zulip itself uses (through pyvips) for avatars and icons.
//
// sharp is loaded on first use, not at start-up: it adds about 30 MB and half
// a second, which a server that never sees an image should not pay.
//
// Untrusted input: as Zulip does, every libvips loader is blocked except the
// formats avatars may have (PNG, JPEG, WebP, GIF, TIFF, HEIF/AVIF), so SVG,
// PDF and the rest are never parsed; the header is read first so that callers
// can refuse decompression bombs before any pixel is decoded, and decoding is
// limited to IMAGE_BOMB_TOTAL_PIXELS as well. The block list is process-wide.
import { IMAGE_BOMB_TOTAL_PIXELS, identicon, identiconPixels } from "./domain/avatar.ts";

type SharpFactory = (typeof import("sharp"))["default"];

/** The libvips loaders images may be decoded with (Zulip's pyvips.operation_block_set list). */
const ALLOWED_LOADERS = [
  "VipsForeignLoadPng",
  "VipsForeignLoadJpeg",
  "VipsForeignLoadWebp",
  "VipsForeignLoadNsgif",
  "VipsForeignLoadTiff",
  "VipsForeignLoadHeif",
];

let loading: Promise<SharpFactory> | undefined;

function sharpLibrary(): Promise<SharpFactory> {
  loading ??= import("sharp").then(({ default: sharp }) => {
    // Each image is processed once: libvips' operation cache would only hold memory.
    sharp.cache(false);
    sharp.block({ operation: ["VipsForeignLoad"] });
    sharp.unblock({ operation: ALLOWED_LOADERS });
    return sharp;
  });
  return loading;
}

/** What an image file's header says, read without decoding its pixels. */
export interface ImageInfo {
  format: string;
  width: number;
  height: number;
  /** Frames of an animation, pages of a TIFF; 1 for a still image. */
  pages: number;
}

/** Reads an image's header. Rejects when the file is no image of an allowed format. */
export async function probeImage(file: string): Promise<ImageInfo> {
  const sharp = await sharpLibrary();
  const meta = await sharp(file, { limitInputPixels: false }).metadata();
  if (meta.width === undefined || meta.height === undefined) throw new Error("image without dimensions");
  return { format: meta.format ?? "unknown", width: meta.width, height: meta.height, pages: meta.pages ?? 1 };
}

/**
 * The image scaled and centre-cropped to a `size`×`size` PNG, as Zulip's
 * resize_avatar: the smaller side fills the square (small images are scaled
 * up), EXIF orientation applied, an animation's first frame only.
 */
export async function squarePng(file: string, size: number): Promise<Buffer> {
  const sharp = await sharpLibrary();
  return sharp(file, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, autoOrient: true })
    .resize(size, size, { fit: "cover", position: "centre" })
    .png()
    .toBuffer();
}

/** RGB pixels (3 bytes each, row by row) as a PNG, with a palette when the colours fit one. */
export async function pngFromPixels(pixels: Buffer, width: number, height: number): Promise<Buffer> {
  const sharp = await sharpLibrary();
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png({ palette: true, compressionLevel: 9 })
    .toBuffer();
}

/** Generated images by seed and size: each is drawn once, and the most recently used are kept. */
const IDENTICON_CACHE_ENTRIES = 2000;
const identicons = new Map<string, Promise<Buffer>>();

/** The identicon of `seed` as a `size`×`size` PNG (a few hundred bytes: two colours). */
export function identiconPng(seed: string, size: number): Promise<Buffer> {
  const key = `${size}:${seed}`;
  let png = identicons.get(key);
  if (png) {
    identicons.delete(key);
  } else {
    const drawing = pngFromPixels(identiconPixels(identicon(seed), size), size, size);
    // A failure is not remembered: the next request tries again.
    drawing.catch(() => {
      if (identicons.get(key) === drawing) identicons.delete(key);
    });
    png = drawing;
    if (identicons.size >= IDENTICON_CACHE_ENTRIES) identicons.delete(identicons.keys().next().value!);
  }
  identicons.set(key, png);
  return png;
}
