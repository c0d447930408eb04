package files

// examineFlags are openExamined's flags beyond O_RDONLY (none on
// Windows, which has no FIFOs at a path and whose os.Open of a symlink
// is refused by the SameFile check).
const examineFlags = 0

// nofollowFlag is none on Windows (examineFlags).
const nofollowFlag = 0
