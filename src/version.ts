// What Parley reports about itself. Zulip clients check zulip_feature_level to
// decide which API features to use; 416 is the newest level the contract
// describes (welcome_message_custom_text on invitations).
export const SERVICE_FEATURE_LEVEL = 416;
/** Starts with a Zulip-style "major.minor" so clients that parse the version accept it. */
export const SERVICE_VERSION = "11.0-parley-0.1.0";
export const SERVICE_MERGE_BASE = "11.0-parley-0.1.0";
