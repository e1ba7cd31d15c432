// The organization's custom profile fields (/register's custom_profile_fields,
// replaced whole by custom_profile_fields events). Each user's values live on
// the user object (profile_data), kept by realm_user events.
import { create } from "zustand";

export interface ProfileField {
  id: number;
  name: string;
  type: number;
  hint: string;
  /** JSON: a select field's options, an external account's subtype and URL pattern. */
  field_data: string;
  order: number;
  display_in_profile_summary?: boolean;
  /** Whether people may set their own value (administrators always may). */
  editable_by_user?: boolean;
  required?: boolean;
}

/** Zulip's field types (custom_profile_field_types). */
export const FIELD_TYPE = { SHORT_TEXT: 1, LONG_TEXT: 2, SELECT: 3, DATE: 4, URL: 5, USER: 6, EXTERNAL_ACCOUNT: 7, PRONOUNS: 8 } as const;

export const useProfileFields = create<{ fields: ProfileField[] }>(() => ({ fields: [] }));

export const profileFieldsStore = {
  load(fields: ProfileField[] | undefined): void {
    useProfileFields.setState({ fields: [...(fields ?? [])].sort((a, b) => a.order - b.order) });
  },
};

/** Zulip's DEFAULT_EXTERNAL_ACCOUNTS: the URL each known subtype links a username to. */
const EXTERNAL_ACCOUNT_URLS: Record<string, string> = {
  github: "https://github.com/%(username)s",
  twitter: "https://twitter.com/%(username)s",
};

/** The link an external-account field's value stands for, if the field says how to make one. */
export function externalAccountUrl(fieldData: string, username: string): string | null {
  try {
    const data = JSON.parse(fieldData) as { subtype?: string; url_pattern?: string };
    const pattern = data.subtype === "custom" ? data.url_pattern : EXTERNAL_ACCOUNT_URLS[data.subtype ?? ""];
    if (!pattern) return null;
    const url = pattern.replace("%(username)s", encodeURIComponent(username));
    return /^https?:\/\//i.test(url) ? url : null;
  } catch {
    return null;
  }
}

/** A select field's option text for the stored option id. */
export function selectOptionText(fieldData: string, value: string): string {
  try {
    const options = JSON.parse(fieldData) as Record<string, { text: string }>;
    return options[value]?.text ?? value;
  } catch {
    return value;
  }
}
