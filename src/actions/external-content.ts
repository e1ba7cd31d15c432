// The key the image proxy's paths are signed with (domain/external-content.ts).
// The fetching itself is outbound/external-content.ts.
import crypto from "node:crypto";
import type { FileStore } from "../files/store.ts";
import { uploadSigningKey } from "./uploads.ts";

const keys = new WeakMap<FileStore, Promise<Buffer>>();

/** The key external-content paths are signed with: derived from the server's upload-signing secret, shared by every process (read once per process). */
export function externalContentKey(files: FileStore): Promise<Buffer> {
  let key = keys.get(files);
  if (!key) {
    key = uploadSigningKey(files).then((secret) => crypto.createHmac("sha256", secret).update("external_content").digest());
    key.catch(() => keys.delete(files));
    keys.set(files, key);
  }
  return key;
}
