package protocol

// enc builds one packet; the first error stops it and names the field.
type enc struct {
	b     []byte
	start int
	id    ID
	typ   Type
	field string
	err   error
}

func newEnc(b []byte, id ID, t Type) enc {
	return enc{b: AppendHeader(b, id, t), start: len(b), id: id, typ: t}
}

func (e *enc) fail(field string, err error) {
	if e.err == nil {
		e.field, e.err = field, err
	}
}

func (e *enc) str(field, s string) {
	if e.err != nil {
		return
	}
	var err error
	if e.b, err = AppendString(e.b, s); err != nil {
		e.fail(field, err)
	}
}

func (e *enc) bool(v bool)        { e.b = AppendBool(e.b, v) }
func (e *enc) i32(v int32)        { e.b = AppendInt32(e.b, v) }
func (e *enc) i64(v int64)        { e.b = AppendInt64(e.b, v) }
func (e *enc) u8(v byte)          { e.b = append(e.b, v) }
func (e *enc) raw(v []byte)       { e.b = append(e.b, v...) }
func (e *enc) count(n int)        { e.i32(int32(n)) }
func (e *enc) okCount(n int) bool { return n <= 0x7FFFFFFF }

func (e *enc) strs(field string, v []string) {
	if !e.okCount(len(v)) {
		e.fail(field, ErrBadCount)
		return
	}
	e.count(len(v))
	for _, s := range v {
		e.str(field, s)
	}
}

func (e *enc) strs8(field string, v []string, maxChars int) {
	if len(v) > 255 {
		e.fail(field, ErrBadCount)
		return
	}
	e.u8(byte(len(v)))
	for _, s := range v {
		if utf16Units(s) > maxChars {
			e.fail(field, ErrStringTooLong)
			return
		}
		e.str(field, s)
	}
}

func (e *enc) bytes8(field string, v []byte) {
	if len(v) > 255 {
		e.fail(field, ErrStringTooLong)
		return
	}
	e.u8(byte(len(v)))
	e.raw(v)
}

func (e *enc) users(field string, v []User) {
	if !e.okCount(len(v)) {
		e.fail(field, ErrBadCount)
		return
	}
	e.count(len(v))
	for i := range v {
		u := &v[i]
		e.str(field, u.Name)
		e.str(field, u.Profile)
		e.str(field, u.Host)
		e.str(field, u.Member)
		e.str(field, u.Link)
	}
}

// done returns the packet, or the input unchanged and an *EncodeError.
func (e *enc) done() ([]byte, error) {
	if e.err != nil {
		return e.b[:e.start], &EncodeError{ID: e.id, Type: e.typ, Field: e.field, Err: e.err}
	}
	return e.b, nil
}
