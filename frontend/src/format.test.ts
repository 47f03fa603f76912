import { describe, expect, it } from "vitest";
import { fileSize } from "./format";

describe("fileSize", () => {
  it("says KB below a megabyte (45 KB read as 0.0 MB)", () => {
    expect(fileSize(45_000)).toBe("44 KB");
    expect(fileSize(2_048)).toBe("2 KB");
    expect(fileSize(1_536)).toBe("1.5 KB");
  });

  it("says MB and GB above, without a needless .0", () => {
    expect(fileSize(3 * 1024 * 1024)).toBe("3 MB");
    expect(fileSize(1_572_864)).toBe("1.5 MB");
    expect(fileSize(52_428_800)).toBe("50 MB");
    expect(fileSize(5 * 1024 ** 3)).toBe("5 GB");
  });

  it("counts bytes below a kilobyte", () => {
    expect(fileSize(0)).toBe("0 bytes");
    expect(fileSize(1)).toBe("1 byte");
    expect(fileSize(900)).toBe("900 bytes");
  });
});
