package cpunits

// nonblock is 0: Windows has no FIFOs at a path.
const nonblock = 0
