import { describe, expect, it } from "vitest";
import { activityGroup, counted, fileSize, groupedBy } from "./format";

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

describe("activityGroup", () => {
  const now = new Date(2026, 10, 25, 9, 30);
  it("says Today, Yesterday, then the last 7 and 30 days", () => {
    expect(activityGroup(new Date(2026, 10, 25, 0, 5), now)).toBe("Today");
    expect(activityGroup(new Date(2026, 10, 24, 23, 59), now)).toBe("Yesterday");
    expect(activityGroup(new Date(2026, 10, 19), now)).toBe("Previous 7 days");
    expect(activityGroup(new Date(2026, 10, 1), now)).toBe("Previous 30 days");
  });

  it("then the month, with its year when it is not this one", () => {
    expect(activityGroup(new Date(2026, 7, 3), now)).toBe("August");
    expect(activityGroup(new Date(2025, 11, 31), now)).toBe("December 2025");
  });
});

describe("groupedBy", () => {
  it("keeps the order and cuts it where the heading changes", () => {
    expect(groupedBy([1, 2, 5, 6, 9], (n) => (n < 5 ? "small" : "big"))).toEqual([
      { heading: "small", items: [1, 2] },
      { heading: "big", items: [5, 6, 9] },
    ]);
  });
});

describe("counted", () => {
  it("names one thing in the singular and others in the plural", () => {
    expect(counted(1, "chat")).toBe("1 chat");
    expect(counted(0, "chat")).toBe("0 chats");
    expect(counted(2, "other member")).toBe("2 other members");
    expect(counted(3, "person", "people")).toBe("3 people");
  });
});
