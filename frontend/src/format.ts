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
