// A floating panel beside the button that opened it, drawn over everything
// (a portal with fixed position, so the message list's clipping does not cut
// it), below the button or above when there is no room, kept inside the
// window. Escape and a click outside close it.
import { useEffect, useLayoutEffect, useRef, useState, type ReactNode } from "react";
import { createPortal } from "react-dom";

export function Popover({ anchor, onClose, className, children, label, role }: { anchor: HTMLElement; onClose: () => void; className?: string; children: ReactNode; label: string; role?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const [position, setPosition] = useState<{ top: number; left: number } | null>(null);

  useLayoutEffect(() => {
    const place = () => {
      const el = ref.current;
      if (!el) return;
      const a = anchor.isConnected ? anchor.getBoundingClientRect() : { top: window.innerHeight / 2, bottom: window.innerHeight / 2, left: window.innerWidth / 2, right: window.innerWidth / 2 };
      const { width, height } = el.getBoundingClientRect();
      const margin = 6;
      let top = a.bottom + 4;
      if (top + height > window.innerHeight - margin) top = Math.max(margin, a.top - height - 4);
      let left = a.right - width;
      left = Math.min(Math.max(margin, left), window.innerWidth - width - margin);
      setPosition({ top, left });
    };
    place();
    // Content that arrives later (the emoji picker, loaded on first use) changes the size: placed again.
    const observer = new ResizeObserver(place);
    if (ref.current) observer.observe(ref.current);
    window.addEventListener("resize", place);
    return () => {
      observer.disconnect();
      window.removeEventListener("resize", place);
    };
  }, [anchor]);

  useEffect(() => {
    const onDown = (e: MouseEvent) => {
      const target = e.target as Node;
      if (ref.current?.contains(target) || anchor.contains(target)) return;
      onClose();
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        onClose();
      }
    };
    document.addEventListener("mousedown", onDown);
    document.addEventListener("keydown", onKey, true);
    return () => {
      document.removeEventListener("mousedown", onDown);
      document.removeEventListener("keydown", onKey, true);
    };
  }, [anchor, onClose]);

  return createPortal(
    <div
      ref={ref}
      className={`popover ${className ?? ""}`}
      role={role}
      aria-label={label}
      style={position ? { top: position.top, left: position.left } : { top: 0, left: 0, visibility: "hidden" }}
    >
      {children}
    </div>,
    document.body,
  );
}
