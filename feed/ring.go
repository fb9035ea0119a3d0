package feed

// blockSize is the size of the blocks frames are kept in: one allocation
// holds a few hundred frames of a flood, instead of one or two each.
const blockSize = 64 << 10

// ring keeps the latest frames, encoded, for the streams and for clients
// that resume: within maxFrames and maxBytes, dropping the oldest frame by
// frame. Frames sit back to back in blocks. A block is only ever appended
// to, so a stream may read the frames it was handed without holding the
// feed's lock while new ones are added; a block whose frames are all
// dropped is reused only while recycle is set (no stream is reading), and
// let go otherwise.
type ring struct {
	maxFrames, maxBytes int
	recycle             bool
	spare               *block

	blocks []*block // oldest first
	head   int      // frames of blocks[0] already dropped
	n      int      // frames kept
	bytes  int      // their size
	first  uint64   // id of the oldest frame kept (when n > 0)
	next   uint64   // id of the last frame added
}

type block struct {
	data []byte
	ends []int // where each frame ends in data
}

func (b *block) frame(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.data[start:b.ends[i]:b.ends[i]]
}

// add keeps one frame (copied) and drops the oldest past the bounds, the
// last one excepted.
func (r *ring) add(frame []byte) uint64 {
	var b *block
	if k := len(r.blocks); k > 0 && len(r.blocks[k-1].data)+len(frame) <= cap(r.blocks[k-1].data) {
		b = r.blocks[k-1]
	} else {
		if b = r.spare; b != nil && len(frame) <= cap(b.data) {
			r.spare = nil
		} else {
			b = &block{data: make([]byte, 0, max(blockSize, len(frame)))}
		}
		r.blocks = append(r.blocks, b)
	}
	b.data = append(b.data, frame...)
	b.ends = append(b.ends, len(b.data))
	r.next++
	if r.n == 0 {
		r.first = r.next
	}
	r.n++
	r.bytes += len(frame)
	r.trim()
	return r.next
}

// skip numbers a frame too large to keep, past maxBytes on its own: it
// is dropped at once with every frame before it, as keeping it would
// have, and a stream or a resuming client is told it missed them.
func (r *ring) skip() uint64 {
	for r.n > 0 {
		r.dropOldest()
	}
	r.next++
	return r.next
}

// setMaxBytes changes the byte bound, dropping what is past it now.
func (r *ring) setMaxBytes(n int) {
	r.maxBytes = n
	r.trim()
}

// trim drops the oldest frames past the bounds, the last one excepted.
func (r *ring) trim() {
	for r.n > 1 && (r.n > r.maxFrames || r.bytes > r.maxBytes) {
		r.dropOldest()
	}
}

func (r *ring) dropOldest() {
	b := r.blocks[0]
	r.bytes -= len(b.frame(r.head))
	r.head++
	r.n--
	r.first++
	if r.head == len(b.ends) {
		r.blocks[0] = nil
		r.blocks = r.blocks[1:]
		r.head = 0
		if r.recycle && cap(b.data) == blockSize {
			b.data, b.ends = b.data[:0], b.ends[:0]
			r.spare = b
		}
	}
}

// kept is a frame handed to a stream.
type kept struct {
	id   uint64
	data []byte
}

// since fills buf (up to its capacity) with the frames after id, and says
// how many frames after id are gone.
func (r *ring) since(id uint64, buf []kept) (frames []kept, missed uint64) {
	buf = buf[:0]
	if r.n == 0 {
		if id < r.next {
			missed = r.next - id
		}
		return buf, missed
	}
	if id+1 < r.first {
		missed = r.first - id - 1
	}
	// The frame id+1 (or the oldest kept): its block and index in it.
	skip := r.head
	if id >= r.first {
		skip += int(min(id-r.first+1, uint64(r.n)))
	}
	next := max(id+1, r.first)
	for _, b := range r.blocks {
		for ; skip < len(b.ends) && len(buf) < cap(buf); skip++ {
			buf = append(buf, kept{next, b.frame(skip)})
			next++
		}
		if len(buf) == cap(buf) {
			break
		}
		skip -= len(b.ends) // past this block: an index into the next
	}
	return buf, missed
}
