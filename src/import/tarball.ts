// Unpacking an export tarball (.tar.gz) as a stream into a directory, so
// that its files can then be read one at a time in the order the importer
// needs (a tarball's order is the exporter's), with bounded memory.
import { createReadStream, createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import tar from "tar-stream";

export class ImportFormatError extends Error {}

/** Unpacks `tarball` into `dir`; entries leaving `dir` (absolute, "..") or of other types than files and directories are refused. */
export async function unpackTarball(tarball: string, dir: string): Promise<number> {
  const extract = tar.extract();
  let files = 0;
  extract.on("entry", (header, stream, next) => {
    const name = path.normalize(header.name);
    const target = path.join(dir, name);
    if (path.isAbsolute(name) || name.startsWith("..") || !target.startsWith(dir + path.sep)) {
      stream.resume();
      next(new ImportFormatError(`unsafe path in the tarball: ${header.name}`));
      return;
    }
    if (header.type === "directory") {
      stream.resume();
      fs.mkdir(target, { recursive: true }).then(() => next(), next);
      return;
    }
    if (header.type !== "file") {
      stream.resume();
      stream.on("end", () => next());
      return;
    }
    files++;
    fs.mkdir(path.dirname(target), { recursive: true })
      .then(() => pipeline(stream, createWriteStream(target)))
      .then(() => next(), next);
  });
  try {
    await pipeline(createReadStream(tarball), createGunzip(), extract);
  } catch (error) {
    if (error instanceof ImportFormatError) throw error;
    throw new ImportFormatError(`cannot read ${tarball} as a .tar.gz: ${(error as Error).message}`);
  }
  return files;
}

/** The directory holding `marker` (Zulip's tarballs wrap everything in one top-level directory). */
export async function findRoot(dir: string, marker: string, what = "the tarball: not a Zulip export"): Promise<string> {
  try {
    await fs.access(path.join(dir, marker));
    return dir;
  } catch {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      try {
        await fs.access(path.join(dir, entry.name, marker));
        return path.join(dir, entry.name);
      } catch {
        // not this one
      }
    }
  }
  throw new ImportFormatError(`no ${marker} in ${what}`);
}

export async function readJson<T>(file: string): Promise<T> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch {
    throw new ImportFormatError(`missing ${path.basename(file)} in the export`);
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new ImportFormatError(`${path.basename(file)} is not valid JSON: ${(error as Error).message}`);
  }
}

export async function readJsonIfPresent<T>(file: string, fallback: T): Promise<T> {
  try {
    await fs.access(file);
  } catch {
    return fallback;
  }
  return readJson<T>(file);
}
