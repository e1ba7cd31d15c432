// Unpacking a .zip archive (a Slack export) into a directory: the central
// directory at the end of the file names every entry, each is read from its
// local header and inflated as a stream (stored and deflated entries, the two
// methods zip writers use), so memory stays bounded whatever the archive's size.
import { createReadStream, createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { crc32, createInflateRaw } from "node:zlib";
import { ImportFormatError } from "./tarball.ts";

interface Entry {
  name: string;
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

async function readAt(handle: fs.FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

async function centralDirectory(handle: fs.FileHandle, size: number): Promise<Entry[]> {
  // The end record is in the last 22 bytes plus a comment of up to 65,535.
  const tailLength = Math.min(size, 22 + 0xffff);
  const tail = await readAt(handle, size - tailLength, tailLength);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new ImportFormatError("not a zip file (no end of central directory)");
  const count = tail.readUInt16LE(at + 10);
  const cdSize = tail.readUInt32LE(at + 12);
  const cdOffset = tail.readUInt32LE(at + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) throw new ImportFormatError("ZIP64 archives are not supported: unzip the export and zip it again under 4 GB, or split it");
  const cd = await readAt(handle, cdOffset, cdSize);
  const entries: Entry[] = [];
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== CENTRAL) throw new ImportFormatError("damaged zip file (central directory)");
    const flags = cd.readUInt16LE(p + 8);
    const nameLength = cd.readUInt16LE(p + 28);
    const extraLength = cd.readUInt16LE(p + 30);
    const commentLength = cd.readUInt16LE(p + 32);
    const rawName = cd.subarray(p + 46, p + 46 + nameLength);
    entries.push({
      // Bit 11: the name is UTF-8; otherwise CP437, which for the ASCII names exports use reads the same.
      name: rawName.toString(flags & 0x800 ? "utf8" : "latin1"),
      method: cd.readUInt16LE(p + 10),
      flags,
      crc: cd.readUInt32LE(p + 16),
      compressedSize: cd.readUInt32LE(p + 20),
      size: cd.readUInt32LE(p + 24),
      localOffset: cd.readUInt32LE(p + 42),
    });
    p += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** Counts the bytes and the CRC-32 of what passes, failing if they are not what the central directory says. */
function checked(entry: Entry): Transform {
  let crc = 0;
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      crc = crc32(chunk, crc);
      bytes += chunk.length;
      if (bytes > entry.size) callback(new ImportFormatError(`damaged zip file: ${entry.name} is longer than its recorded size`));
      else callback(null, chunk);
    },
    flush(callback) {
      if (bytes !== entry.size || crc >>> 0 !== entry.crc >>> 0) callback(new ImportFormatError(`damaged zip file: ${entry.name} fails its checksum`));
      else callback();
    },
  });
}

/** Unpacks `zip` into `dir`; entries leaving `dir` (absolute, "..") are refused, encrypted entries too. */
export async function unpackZip(zip: string, dir: string): Promise<number> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(zip, "r");
  } catch (error) {
    throw new ImportFormatError(`cannot open ${zip}: ${(error as Error).message}`);
  }
  let files = 0;
  try {
    const { size } = await handle.stat();
    for (const entry of await centralDirectory(handle, size)) {
      const name = path.normalize(entry.name.replace(/\\/g, "/"));
      const target = path.join(dir, name);
      if (path.isAbsolute(name) || name.startsWith("..") || !target.startsWith(dir + path.sep)) throw new ImportFormatError(`unsafe path in the zip file: ${entry.name}`);
      if (entry.name.endsWith("/")) {
        await fs.mkdir(target, { recursive: true });
        continue;
      }
      if (entry.flags & 1) throw new ImportFormatError(`encrypted entry in the zip file: ${entry.name}`);
      if (entry.method !== 0 && entry.method !== 8) throw new ImportFormatError(`${entry.name}: zip compression method ${entry.method} is not supported (only stored and deflated)`);
      const local = await readAt(handle, entry.localOffset, 30);
      if (local.length < 30 || local.readUInt32LE(0) !== LOCAL) throw new ImportFormatError(`damaged zip file (local header of ${entry.name})`);
      const start = entry.localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
      await fs.mkdir(path.dirname(target), { recursive: true });
      const source = entry.compressedSize === 0 ? [] : createReadStream(zip, { start, end: start + entry.compressedSize - 1 });
      const steps = entry.method === 8 ? [createInflateRaw(), checked(entry)] : [checked(entry)];
      try {
        await pipeline(source, ...(steps as [Transform]), createWriteStream(target));
      } catch (error) {
        if (error instanceof ImportFormatError) throw error;
        throw new ImportFormatError(`damaged zip file: ${entry.name}: ${(error as Error).message}`);
      }
      files++;
    }
  } finally {
    await handle.close();
  }
  return files;
}
