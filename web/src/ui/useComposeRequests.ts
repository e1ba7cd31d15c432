// The compose box's side of compose requests: applies each request meant for
// its conversation once (topic, added text, focus).
import { useEffect, useRef, type Dispatch, type SetStateAction } from "react";
import { takeComposeRequest, useComposeRequests } from "../model/compose-requests.ts";

export function useComposeRequestsFor(key: string, setTopic: Dispatch<SetStateAction<string>>, setContent: (update: (content: string) => string) => void): void {
  const request = useComposeRequests((s) => s.request);
  const applied = useRef(0);
  useEffect(() => {
    const r = takeComposeRequest(key, applied.current);
    if (!r) return;
    applied.current = r.seq;
    if (r.topic !== undefined) {
      const topic = r.topic;
      const only = r.ifTopic?.trim().toLowerCase();
      setTopic((current) => (only === undefined || current.trim().toLowerCase() === only ? topic : current));
    }
    if (r.insert !== undefined) {
      const text = r.insert;
      setContent((content) => (content === "" ? text : `${content.replace(/\n*$/, "")}\n${text}`));
    }
    if (r.focus === "none") return;
    // After React has drawn the box (a channel's topic field may only now exist).
    requestAnimationFrame(() => {
      const field = document.getElementById(r.focus === "topic" ? "compose-topic" : "compose-message") ?? document.getElementById("compose-message");
      if (!(field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement)) return;
      field.focus();
      if (r.focus === "message") field.setSelectionRange(field.value.length, field.value.length);
    });
  }, [request, key, setTopic, setContent]);
}
