// `<time:…>` global times. Zulip parses the text with python-dateutil; this is
// a small parser for the forms people and clients actually send:
//   - ISO 8601 (`2017-06-05T22:30:00Z`, `2017-06-05 22:30+02:00`), what the
//     web composer's time picker inserts;
//   - a Unix timestamp (`1496701800`, `1496701800.5`);
//   - free text with a month name: `Jun 5th 2017, 10:30PM`, `31 Dec 2017`,
//     `31 Dec 2017 5:30 am IST`, `December 31, 2017 17:30 UTC`.
// Times without a zone are UTC, as in Zulip. Returns the ISO string Zulip
// puts in `datetime` ("2017-06-05T22:30:00Z") or null when unparseable.

const MONTHS: Record<string, number> = {
  jan: 1, january: 1, feb: 2, february: 2, mar: 3, march: 3, apr: 4, april: 4, may: 5,
  jun: 6, june: 6, jul: 7, july: 7, aug: 8, august: 8, sep: 9, sept: 9, september: 9,
  oct: 10, october: 10, nov: 11, november: 11, dec: 12, december: 12,
};
const WEEKDAYS = new Set([
  "mon", "monday", "tue", "tues", "tuesday", "wed", "wednesday", "thu", "thur", "thurs",
  "thursday", "fri", "friday", "sat", "saturday", "sun", "sunday",
]);
// Offsets in minutes for common zone abbreviations (a subset of Zulip's common_timezones).
const ZONES: Record<string, number> = {
  utc: 0, gmt: 0, z: 0, ut: 0, bst: 60, ist: 330, cet: 60, cest: 120, eet: 120, eest: 180,
  wet: 0, west: 60, msk: 180, pst: -480, pdt: -420, mst: -420, mdt: -360, cst: -360,
  cdt: -300, est: -300, edt: -240, akst: -540, akdt: -480, hst: -600, aest: 600, aedt: 660,
  acst: 570, acdt: 630, awst: 480, nzst: 720, nzdt: 780, jst: 540, kst: 540, sgt: 480,
  hkt: 480, pht: 480, wib: 420, pkt: 300, npt: 345, brt: -180, art: -180, sast: 120,
  cat: 120, eat: 180, wat: 60,
};

const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

function iso(ms: number): string | null {
  if (!Number.isFinite(ms)) return null;
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return null;
  const frac = d.getUTCMilliseconds();
  let s = d.toISOString(); // 2017-06-05T22:30:00.000Z
  s = frac ? s.replace(/(\.\d*?)0+Z$/, "$1Z") : s.replace(/\.000Z$/, "Z");
  return s;
}

function valid(y: number, mo: number, d: number, h: number, mi: number, s: number): boolean {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return false;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return d <= days;
}

function offsetMinutes(tz: string): number | null {
  if (/^z$/i.test(tz)) return 0;
  const m = /^(?:utc|gmt)?([+-])(\d{1,2})(?::?(\d{2}))?$/i.exec(tz);
  if (!m) return null;
  const v = Number(m[2]) * 60 + Number(m[3] ?? 0);
  return m[1] === "-" ? -v : v;
}

export function parseTime(input: string): string | null {
  const text = input.trim();
  if (!text) return null;

  if (/^-?\d+(\.\d+)?$/.test(text)) {
    const seconds = Number(text);
    if (Math.abs(seconds) > 8.64e12) return null;
    return iso(seconds * 1000);
  }

  const m = ISO_RE.exec(text);
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
    if (!valid(y, mo, d, h, mi, s)) return null;
    const ms = m[7] ? Math.round(Number(`0.${m[7]}`) * 1000) : 0;
    const off = m[8] ? offsetMinutes(m[8]) : 0;
    if (off === null) return null;
    return iso(Date.UTC(y, mo - 1, d, h, mi, s, ms) - off * 60000);
  }

  return parseLoose(text);
}

function parseLoose(text: string): string | null {
  const tokens = text.toLowerCase().match(/[a-z]+|\d+(?::\d+)*(?:\.\d+)?|[+-]\d{2}:?\d{2}/g);
  if (!tokens) return null;
  let year: number | null = null;
  let month: number | null = null;
  let day: number | null = null;
  let hour: number | null = null;
  let minute = 0;
  let second = 0;
  let ampm: "am" | "pm" | null = null;
  let offset: number | null = null;
  const bare: number[] = [];

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (/^[a-z]+$/.test(t)) {
      if (t in MONTHS) month = MONTHS[t]!;
      else if (WEEKDAYS.has(t)) continue;
      else if (t === "am" || t === "pm" || t === "a" || t === "p") ampm = t.startsWith("a") ? "am" : "pm";
      else if (["st", "nd", "rd", "th", "at", "of", "on", "m"].includes(t)) continue;
      else if (t in ZONES && offset === null) offset = ZONES[t]!;
      else return null;
    } else if (/^[+-]/.test(t)) {
      const off = offsetMinutes(t);
      if (off === null) return null;
      offset = off;
    } else if (t.includes(":")) {
      const parts = t.split(":").map(Number);
      hour = parts[0]!;
      minute = parts[1] ?? 0;
      second = Math.floor(parts[2] ?? 0);
    } else if (t.length === 4) {
      year = Number(t);
    } else {
      bare.push(Number(t));
    }
  }
  for (const n of bare) {
    if (day === null && n >= 1 && n <= 31) day = n;
    else if (hour === null && ampm && n <= 12) hour = n;
    else if (year === null && n >= 32) year = n < 100 ? 2000 + n : n;
    else return null;
  }
  if (month === null || day === null) return null;
  const now = new Date();
  year ??= now.getUTCFullYear();
  hour ??= 0;
  if (ampm === "pm" && hour < 12) hour += 12;
  if (ampm === "am" && hour === 12) hour = 0;
  if (!valid(year, month, day, hour, minute, second)) return null;
  return iso(Date.UTC(year, month - 1, day, hour, minute, second) - (offset ?? 0) * 60000);
}
