// Password hashing and API keys. argon2id: memory-hard, so a stolen database
// does not give passwords away cheaply.
import crypto from "node:crypto";

// OWASP's recommended argon2id parameters (19 MiB, 2 passes).
const ARGON2_OPTIONS = { memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

let argon2: Promise<typeof import("@node-rs/argon2")> | undefined;

/** The native argon2 module, loaded with the first password hashed or checked (API keys and sessions need none). */
function loadArgon2(): Promise<typeof import("@node-rs/argon2")> {
  argon2 ??= import("@node-rs/argon2");
  return argon2;
}

export async function hashPassword(password: string): Promise<string> {
  return (await loadArgon2()).hash(password, ARGON2_OPTIONS);
}

let dummyHash: Promise<string> | undefined;

/**
 * Checks a password. Without a hash (unknown user, account without password)
 * it still runs one argon2 verification, so the reply time does not tell
 * which accounts exist.
 */
export async function verifyPassword(passwordHash: string | null, password: string): Promise<boolean> {
  const { verify } = await loadArgon2();
  if (passwordHash === null) {
    dummyHash ??= hashPassword(randomPassword());
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

const KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** 32 random alphanumerics, the format Zulip's API keys have. */
export function generateApiKey(): string {
  let key = "";
  while (key.length < 32) {
    for (const byte of crypto.randomBytes(48)) {
      // 248 = 4 * 62: drop the top bytes so every character is equally likely.
      if (byte < 248 && key.length < 32) key += KEY_ALPHABET[byte % 62];
    }
  }
  return key;
}

/** Constant-time comparison, so response timing does not leak how much of a key matched. */
export function keysEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

export function randomPassword(): string {
  return crypto.randomBytes(12).toString("base64url");
}
