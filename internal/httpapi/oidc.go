package httpapi

// oidcStatus says whether the sign-in page offers single sign-on.
func (s *Server) oidcStatus() oidcStatus { return oidcStatus{} }
