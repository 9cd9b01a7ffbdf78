// ServiceSupport
