package cpunits

// sumFlags are fileSum's flags beyond O_RDONLY (none on Windows, which
// has no FIFOs at a path).
const sumFlags = 0
