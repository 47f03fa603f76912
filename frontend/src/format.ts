// How numbers read in the web app.

function scaled(value: number, unit: string): string {
  return `${value >= 10 ? Math.round(value) : Number(value.toFixed(1))} ${unit}`;
}

/** A file size as people read it: 45_000 -> "44 KB", 1_572_864 -> "1.5 MB", 52_428_800 -> "50 MB". */
export function fileSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} ${bytes === 1 ? "byte" : "bytes"}`;
  const kb = bytes / 1024;
  if (kb < 1024) return scaled(kb, "KB");
  const mb = kb / 1024;
  return mb < 1024 ? scaled(mb, "MB") : scaled(mb / 1024, "GB");
}

const DAY_MS = 86_400_000;

function startOfDay(date: Date): number {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime();
}

/** The heading a chat last active at `when` is listed under, as seen `now`: Today, Yesterday,
 * Previous 7 days, Previous 30 days, then its month ("October 2026"; this year: "October"). */
export function activityGroup(when: Date, now: Date = new Date()): string {
  const days = Math.round((startOfDay(now) - startOfDay(when)) / DAY_MS);
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days <= 7) return "Previous 7 days";
  if (days <= 30) return "Previous 30 days";
  const month = when.toLocaleString("en", { month: "long" });
  return when.getFullYear() === now.getFullYear() ? month : `${month} ${when.getFullYear()}`;
}

/** Items in their order, cut into runs under the same heading. */
export function groupedBy<T>(items: T[], heading: (item: T) => string): { heading: string; items: T[] }[] {
  const groups: { heading: string; items: T[] }[] = [];
  for (const item of items) {
    const name = heading(item);
    const last = groups[groups.length - 1];
    if (last && last.heading === name) last.items.push(item);
    else groups.push({ heading: name, items: [item] });
  }
  return groups;
}

/** A day as people write it: "25 November 2026". */
export function longDate(iso: string): string {
  return new Date(iso).toLocaleDateString("en-GB", { day: "numeric", month: "long", year: "numeric" });
}

/** "1 chat", "3 chats": a count with its noun. */
export function counted(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString()} ${count === 1 ? one : many}`;
}
