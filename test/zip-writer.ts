// Writes small zip files for tests (the Slack importer's input): deflated
// entries with UTF-8 names, as Slack's exporter writes them. Parley itself
// only reads zip files (src/import/zip.ts).
import { crc32, deflateRawSync } from "node:zlib";

/** A zip header: its signature, then [offset, value] fields (CRC, sizes and offsets 4 bytes wide, the others 2). */
function header(length: number, signature: number, fields: [number, number][]): Buffer {
  const buffer = Buffer.alloc(length);
  buffer.writeUInt32LE(signature, 0);
  const wide = new Set(length === 30 ? [14, 18, 22] : [16, 20, 24, 42]);
  for (const [at, value] of fields) {
    if (wide.has(at)) buffer.writeUInt32LE(value >>> 0, at);
    else buffer.writeUInt16LE(value, at);
  }
  return buffer;
}

/** A zip file (deflated entries, UTF-8 names), as Slack's exporter writes them. */
export function zipFile(files: Map<string, string | Buffer>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of files) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    const packed = deflateRawSync(data);
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    // Version 2.0, UTF-8 names (bit 11), deflated (8); the same fields in both headers, at their offsets.
    const local = header(30, 0x04034b50, [[4, 20], [6, 0x800], [8, 8], [14, crc], [18, packed.length], [22, data.length], [26, nameBytes.length]]);
    const central = header(46, 0x02014b50, [[4, 20], [6, 20], [8, 0x800], [10, 8], [16, crc], [20, packed.length], [24, data.length], [28, nameBytes.length], [42, offset]]);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + packed.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.size, 8);
  end.writeUInt16LE(files.size, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}
